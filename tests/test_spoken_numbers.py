"""Both sides of a WER in one spelling: numbers written in digits become the words a reader says, so a
recogniser that writes "18th" where the prompt spells "eighteenth" makes no error (issue 95)."""

from __future__ import annotations

import pytest

from vc.evaluation.spoken_numbers import cardinal, ordinal, spell_numbers
from vc.evaluation.transcripts import error_counts, normalize_text


@pytest.mark.parametrize(
    "number, words",
    [
        (0, "zero"),
        (16, "sixteen"),
        (29, "twenty nine"),
        (100, "one hundred"),
        (2000, "two thousand"),
        (2005, "two thousand five"),
        (1_000_215, "one million two hundred fifteen"),
    ],
)
def test_cardinals(number, words):
    assert cardinal(number) == words


@pytest.mark.parametrize(
    "number, words",
    [
        (1, "first"),
        (3, "third"),
        (12, "twelfth"),
        (18, "eighteenth"),
        (20, "twentieth"),
        (29, "twenty ninth"),
    ],
)
def test_ordinals(number, words):
    assert ordinal(number) == words


@pytest.mark.parametrize(
    "text, spelt",
    [
        ("March 16, 1908.", "March sixteen , nineteen oh eight ."),
        ("in 1900 and 1917", "in nineteen hundred and nineteen seventeen"),
        ("The 29th", "The twenty ninth"),
        ("the 1st and 2nd and 3rd", "the first and second and third"),
        ("1,000 men", "one thousand men"),
        ("50% off", "fifty percent off"),
        ("3.5 miles", "three point five miles"),
        ("agent 007", "agent zero zero seven"),
        ("no digits here", "no digits here"),
    ],
)
def test_spell_numbers(text, spelt):
    assert " ".join(spell_numbers(text).split()) == spelt


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("At sea, Monday, March 16, 1908.", "at sea monday march sixteen nineteen oh eight"),
        ("The 29th very foggy.", "the twenty ninth very foggy"),
        ("I saw Mr. Pike, said Mrs Hall!", "i saw mr pike said mrs hall"),
        ("Mister Pike and Missus Hall", "mr pike and mrs hall"),
        ("Twenty-five  men/women", "twenty five men women"),
        ("He\u2019s HERE", "he's here"),
    ],
)
def test_normalize_text_numbers_titles_punctuation_case(text, expected):
    assert normalize_text(text) == expected


def test_a_recogniser_writing_digits_makes_no_error_on_spelt_prompts():
    prompt = "On the eighteenth of March, nineteen oh eight, fifty men came."
    assert error_counts(prompt, "On the 18th of March 1908, 50 men came.")["word_edits"] == 0
    assert error_counts("The 29th very foggy.", "The twenty-ninth, very foggy")["word_edits"] == 0
    assert error_counts("The 29th very foggy.", "The 28th very foggy")["word_edits"] == 1
