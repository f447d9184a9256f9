"""Numbers written in digits, spelt as a reader says them, so that a recogniser writing "18th" or "1908"
and a transcript spelling "eighteenth" or "nineteen oh eight" (or the other way round) agree.

Cardinals in American style without "and" (123 -> "one hundred twenty three"), ordinals from the digits'
suffix (29th -> "twenty ninth"), four-digit numbers from 1100 to 1999 and 2010 to 2099 as years, in pairs
(1908 -> "nineteen oh eight", 1900 -> "nineteen hundred", 2024 -> "twenty twenty four"), decimals digit by
digit after "point", "%" as "percent". Thousands separators ("1,000") are dropped first.
"""

from __future__ import annotations

import re

ONES = (
    "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen "
    "sixteen seventeen eighteen nineteen"
).split()
TENS = "_ _ twenty thirty forty fifty sixty seventy eighty ninety".split()
SCALES = ((10**12, "trillion"), (10**9, "billion"), (10**6, "million"), (1000, "thousand"))
# The last word of a cardinal -> its ordinal; any other word takes "th" ("seventeen" -> "seventeenth").
ORDINAL_WORDS = {
    "one": "first",
    "two": "second",
    "three": "third",
    "five": "fifth",
    "eight": "eighth",
    "nine": "ninth",
    "twelve": "twelfth",
}

THOUSANDS_SEPARATOR = re.compile(r"(?<=\d),(?=\d{3}\b)")
PERCENT = re.compile(r"(\d)\s*%")
NUMBER = re.compile(r"\d+(?:\.\d+)?(?:st|nd|rd|th)?")


def cardinal(number: int) -> str:
    """0 -> "zero", 1215 -> "one thousand two hundred fifteen"."""
    if number < 20:
        return ONES[number]
    if number < 100:
        tens, ones = divmod(number, 10)
        return TENS[tens] + (f" {ONES[ones]}" if ones else "")
    if number < 1000:
        hundreds, rest = divmod(number, 100)
        return f"{ONES[hundreds]} hundred" + (f" {cardinal(rest)}" if rest else "")
    for scale, name in SCALES:
        if number >= scale:
            high, rest = divmod(number, scale)
            return f"{cardinal(high)} {name}" + (f" {cardinal(rest)}" if rest else "")
    raise AssertionError("unreachable")


def ordinal(number: int) -> str:
    """3 -> "third", 29 -> "twenty ninth", 100 -> "one hundredth"."""
    words = cardinal(number).split()
    last = words[-1]
    if last in ORDINAL_WORDS:
        words[-1] = ORDINAL_WORDS[last]
    elif last.endswith("y"):
        words[-1] = last[:-1] + "ieth"
    else:
        words[-1] = last + "th"
    return " ".join(words)


def year(number: int) -> str:
    """A four-digit number as a year is read: 1908 -> "nineteen oh eight", 1900 -> "nineteen hundred"."""
    high, low = divmod(number, 100)
    if low == 0:
        return f"{cardinal(high)} hundred"
    return f"{cardinal(high)} {'oh ' + ONES[low] if low < 10 else cardinal(low)}"


def _is_year(digits: str) -> bool:
    value = int(digits)
    return len(digits) == 4 and (1100 <= value <= 1999 or 2010 <= value <= 2099)


def _spell(match: re.Match) -> str:
    token = match.group(0)
    suffix = token[-2:] if token[-2:].isalpha() else ""
    digits = token[: len(token) - len(suffix)]
    if "." in digits:
        whole, fraction = digits.split(".")
        return f" {cardinal(int(whole))} point {' '.join(ONES[int(d)] for d in fraction)} "
    if suffix:
        return f" {ordinal(int(digits))} "
    if _is_year(digits):
        return f" {year(int(digits))} "
    if len(digits) > 1 and digits.startswith("0"):  # "007": read digit by digit
        return " " + " ".join(ONES[int(d)] for d in digits) + " "
    return f" {cardinal(int(digits))} "


def spell_numbers(text: str) -> str:
    """Every number written in digits in ``text`` replaced by its words (lower case); the rest unchanged."""
    text = THOUSANDS_SEPARATOR.sub("", text)
    text = PERCENT.sub(r"\1 percent", text)
    return NUMBER.sub(_spell, text)
