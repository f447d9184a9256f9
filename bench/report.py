"""Goals and the printed table: results dict in, text out."""

from __future__ import annotations

CONVERT_RTF_GOAL = 0.05
GL_SPEEDUP_GOAL = 3.0
GL_SC_TOLERANCE = 0.01  # "equal" spectral convergence: within 1 % (float32 FFTs in different libraries)
FLAT_TOLERANCE = 0.10  # non-attention step time may grow by at most 10 % from 1x to 4x


def table(headers: list[str], rows: list[list], left: int = 1) -> list[str]:
    """The first ``left`` columns left-aligned, the others right-aligned; cells formatted by the caller."""
    cells = [headers] + [[str(c) for c in row] for row in rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(headers))]

    def line(row):
        return "  ".join(
            c.ljust(w) if i < left else c.rjust(w) for i, (c, w) in enumerate(zip(row, widths, strict=True))
        )

    return [line(headers), line(["-" * w for w in widths])] + [line(r) for r in cells[1:]]


# ------------------------------------------------------------------ goals
def goal_convert(convert: dict) -> dict:
    rtf = convert["1"]["rtf"]["total"]
    return {
        "goal": f"convert RTF <= {CONVERT_RTF_GOAL} total on 2 cores (batch 1, `vc convert IN OUT`)",
        "met": rtf <= CONVERT_RTF_GOAL,
        "value": f"batch 1 RTF {rtf:.4f}; batch 8 RTF {convert['8']['rtf']['total']:.4f}",
        "profile": "convert",
    }


def gl_comparison(rows: list[dict]) -> dict:
    """Ours (default threads) against the fastest librosa variant of one batch size."""
    ours = next(
        r for r in rows if r["method"].startswith("vc.audio.griffin_lim") and "1 thread" not in r["method"]
    )
    librosa = min(
        (r for r in rows if r["method"].startswith("librosa")), key=lambda r: r["seconds_per_utterance"]
    )
    speedup = librosa["seconds_per_utterance"] / ours["seconds_per_utterance"]
    sc_ok = ours["spectral_convergence"] <= librosa["spectral_convergence"] * (1 + GL_SC_TOLERANCE)
    return {"ours": ours, "librosa": librosa, "speedup": speedup, "sc_ok": sc_ok}


def goal_griffinlim(gl: dict) -> dict:
    """Met at a batch size when ours is 3x faster at 32 iterations with equal convergence, or when
    ours run to librosa-32's spectral convergence (the matched-quality run) is 3x faster."""
    parts, met = [], True
    matched = gl.get("matched_quality") or {}
    for batch in ("1", "8"):
        c = gl_comparison(gl["rows"][batch])
        best = c["speedup"] if c["sc_ok"] else 0.0
        part = (
            f"batch {batch}: {c['speedup']:.2f}x vs {c['librosa']['method']} at 32 iterations, SC "
            f"{c['ours']['spectral_convergence']:.4f} vs {c['librosa']['spectral_convergence']:.4f}"
        )
        if matched.get("n_iter") is not None and batch in matched:
            # Against the fastest librosa variant of the 32-iteration rows too, whichever is lower.
            vs_fastest = 1000 * c["librosa"]["seconds_per_utterance"] / matched[batch]["ms_per_utterance"]
            speedup = min(matched[batch]["speedup"], vs_fastest)
            best = max(best, speedup)
            part += f"; ours to librosa-32's SC in {matched['n_iter']} iterations: {speedup:.2f}x"
        met = met and best >= GL_SPEEDUP_GOAL
        parts.append(part)
    return {
        "goal": f"Griffin-Lim >= {GL_SPEEDUP_GOAL:g}x faster than librosa at equal (within "
        f"{100 * GL_SC_TOLERANCE:g} %) or better spectral convergence, batch 1 and 8",
        "met": met,
        "value": "; ".join(parts),
        "profile": "griffinlim",
    }


def evaluate_goals(results: dict) -> list[dict]:
    goals = []
    if "convert" in results:
        goals.append(goal_convert(results["convert"]))
    if "griffinlim" in results:
        goals.append(goal_griffinlim(results["griffinlim"]))
    if "cold_start" in results:
        goals.append(goal_cold_start(results["cold_start"]))
    return goals


def goal_cold_start(cold: dict) -> dict:
    return {
        "goal": f"cold start of `vc convert in.wav out.wav` with the bundled model < {cold['goal_s']:g} s "
        f"(new process, {cold['input_seconds']:.0f} s input)",
        "met": cold["convert_median_s"] < cold["goal_s"],
        "value": f"median {cold['convert_median_s']:.2f} s",
        "profile": None,  # the section's own line splits it into start-up and conversion
    }


# ------------------------------------------------------------------ sections
def header_lines(results: dict) -> list[str]:
    m = results["machine"]
    return [
        f"vc benchmark ({results['mode']}) - {m['date']} - {m['cpu']}, {m['cpu_count']} CPU cores "
        f"(affinity {m['affinity']}), torch {m['torch']} ({m['torch_threads']} threads), librosa {m['librosa']}",
        f"model: {results['model']}",
        f"command: {results['command']}",
        "peak memory: getrusage ru_maxrss of a fresh process per measurement (includes Python + torch, "
        "baseline RSS after imports shown)",
        background_line(results["background_load"]),
    ]


def background_line(load: dict) -> str:
    """How much CPU other processes took during the run: numbers are only clean when this is ~0."""
    line = (
        f"background: other processes used {load['other_cpu_seconds']:.0f} CPU-s during the "
        f"{load['wall_seconds']:.0f} s run ({load['other_percent_of_machine']:.1f} % of the machine)"
    )
    return line + (
        "  <-- WARNING: contended run, timings are pessimistic"
        if load["other_percent_of_machine"] > 5
        else ""
    )


def busy(load: dict) -> str:
    """Other processes' share of the machine during a section, flagged when it distorts timings."""
    text = f"[background load {load['other_percent_of_machine']:.1f} %]"
    return text + (" <-- CONTENDED" if load["other_percent_of_machine"] > 5 else "")


def convert_lines(convert: dict, load: dict) -> list[str]:
    first = convert["1"]
    lines = [
        "",
        f"1. vc convert on CPU: RTF = processing time / input audio duration ({len(first['utterances'])} eval "
        f"utterances {first['utterances'][0]}.., {first['audio_seconds']:.1f} s after trimming) {busy(load)}",
    ]
    stages = ("features", "encoder", "durations", "decoder", "postnet", "postfilter", "vocoder")
    headers = [
        "batch",
        *stages,
        "total",
        "read",
        "dec steps",
        "ms/step",
        "capped",
        "load s",
        "RSS MB",
        "base MB",
    ]
    rows = []
    for batch, r in convert.items():
        rtf = r["rtf"]
        rows.append(
            [batch]
            + [f"{rtf[k]:.4f}" for k in stages]
            + [
                f"{rtf['total']:.4f}",
                f"{r['rtf_read']:.4f}",
                r["decoder_steps"],
                f"{r['decoder_ms_per_step']:.2f}",
            ]
            + [f"{r['items_stopped_by_cap']}/{len(r['utterances'])}", f"{r['load_seconds']:.2f}"]
            + [f"{r['peak_rss_mb']:.0f}", f"{r['rss_baseline_mb']:.0f}"]
        )
    lines += table(headers, rows)
    lines.append(
        f"   model kind: {first.get('model_kind', 'attention')}; total = Converter.convert_batch end to end on "
        "length-sorted batches; the stages are its torch.profiler labels (a profiled pass gives their shares); "
        "read = read_audio (decode+trim), not in total;"
    )
    lines.append(
        f"   dec steps = decoder steps (output frames for the non-autoregressive converter); capped = items "
        f"that hit inference.max_ratio={first['max_ratio']:g}"
    )
    return lines


def griffinlim_lines(gl: dict, load: dict) -> list[str]:
    lines = [
        "",
        f"2. Griffin-Lim, n_iter={gl['n_iter']}, momentum={gl['momentum']}, same seeded random initial phases "
        "(but the row from PGHI's phase, its integration timed), "
        f"true STFT magnitudes of {gl['utterances']} eval utterances ({gl['audio_seconds']:.1f} s), mean of "
        f"{gl['repeats']} repeats; librosa accepts stacked (B, F, T): {gl['librosa_stacked_supported']} "
        f"{busy(load)}",
    ]
    headers = ["batch", "method", "ms/utterance", "ours is x faster", "spectral convergence"]
    rows = []
    for batch, batch_rows in gl["rows"].items():
        ours = gl_comparison(batch_rows)["ours"]["seconds_per_utterance"]
        for r in batch_rows:
            if r.get("not_installed"):
                rows.append([batch, r["method"], "not installed", "", ""])
                continue
            rows.append(
                [
                    batch,
                    r["method"],
                    f"{1000 * r['seconds_per_utterance']:.1f}",
                    f"{r['seconds_per_utterance'] / ours:.2f}",
                    f"{r['spectral_convergence']:.4f}",
                ]
            )
    lines += table(headers, rows, left=2)
    for batch in gl["rows"]:
        c = gl_comparison(gl["rows"][batch])
        lines.append(f"   batch {batch}: ours is {c['speedup']:.2f}x faster than {c['librosa']['method']}")
    if "matched_quality" in gl:
        lines += ["", *matched_quality_lines(gl["matched_quality"])]
    return lines


def matched_quality_lines(matched: dict) -> list[str]:
    """Iterations and time for ours to reach librosa's spectral convergence, batch 1 and 8."""
    lines = [
        f"   at matched quality: librosa {matched['librosa_n_iter']} iterations reach mean SC "
        f"{matched['librosa_spectral_convergence']:.4f}; ours needs (within {100 * matched['tolerance']:g} %):"
    ]
    if matched["n_iter"] is None:
        return [*lines, f"   not reached in {matched['max_iter']} iterations"]
    timings = ", ".join(
        f"batch {b}: {matched[b]['ms_per_utterance']:.1f} vs {matched[b]['librosa_ms_per_utterance']:.1f} "
        f"ms/utt = {matched[b]['speedup']:.2f}x (minima {matched[b]['speedup_of_minima']:.2f}x)"
        for b in ("1", "8")
    )
    return [*lines, f"   {matched['n_iter']} iterations, SC {matched['spectral_convergence']:.4f}; {timings}"]


def training_lines(train: dict, load: dict) -> list[str]:
    lines = [
        "",
        f"3. Training throughput, {train['config']}, the training loop's train_step (vc/training/loop.py) on the same fixed batches of "
        f"{train['single']['batch_size_per_process']} real training utterances, 1 warm-up step per process "
        f"{busy(load)}",
    ]
    headers = ["setup", "threads/proc", "timed batches", "s/batch", "target frames/s", "utt/s", "peak RSS MB"]
    rows = []
    for key, label in (
        ("single", "1 process"),
        ("single_1thread", "1 process, 1 thread"),
        ("ddp2", "2 DDP gloo processes"),
        ("independent2", "2 independent processes, no DDP"),
    ):
        r = train[key]
        rows.append(
            [
                label,
                r["threads_per_process"],
                r["timed_batches"],
                f"{r['seconds_per_batch']:.2f}",
                f"{r['frames_per_second']:.0f}",
                f"{r['utterances_per_second']:.1f}",
                " + ".join(f"{m:.0f}" for m in r["peak_rss_mb_per_process"]),
            ]
        )
    lines += table(headers, rows)
    lines.append(f"   2 DDP processes (torch.set_num_threads(1) each) / 1 process: {train['speedup']:.2f}x")
    return lines + step_profile_lines(train)


def step_profile_lines(train: dict) -> list[str]:
    """Top operators of one profiled step: 1 process x 1 thread, DDP rank 0, independent process 0."""
    columns = [
        ("single_1thread", "1 proc x 1 thread"),
        ("ddp2", "DDP rank 0"),
        ("independent2", "indep. proc 0"),
    ]
    profiles = [train[key]["ranks"][0]["profile"] for key, _ in columns]
    self_ms = [{o["name"]: o["self_ms"] for o in p["top_ops"]} for p in profiles]
    names = list(dict.fromkeys(o["name"] for p in profiles[1::-1] for o in p["top_ops"]))[:12]
    rows = [
        [n] + [_ms(ms.get(n)) for ms in self_ms] + [_ratio(self_ms[1].get(n), self_ms[0].get(n))]
        for n in names
    ]
    rows.append(["(wall of the step)"] + [_ms(p["wall_ms"]) for p in profiles])
    rows[-1].append(_ratio(profiles[1]["wall_ms"], profiles[0]["wall_ms"]))
    rows.append(
        ["(outside operators: waiting, Python)"]
        + [f"{p['outside_ops_percent']:.0f} %" for p in profiles]
        + [""]
    )
    headers = ["operator"] + [label for _, label in columns] + ["DDP / alone"]
    lines = [
        "   one profiled train_step after the timing (torch.profiler, self CPU ms of the top operators):"
    ]
    return lines + ["   " + line for line in table(headers, rows)]


def _ms(value: float | None) -> str:
    return "-" if value is None else f"{value:.0f}"


def _ratio(a: float | None, b: float | None) -> str:
    return "-" if a is None or b is None or b == 0 else f"{a / b:.2f}"


def goal_lines(goals: list[dict], profiles: dict) -> list[str]:
    lines = ["", "Goals"]
    for g in goals:
        lines.append(f"  [{'met' if g['met'] else 'NOT MET'}] {g['goal']}: {g['value']}")
    for name, profs in profiles.items():
        for prof in profs:
            lines += profile_lines(name, prof)
    return lines


def profile_lines(name: str, prof: dict) -> list[str]:
    lines = [
        "",
        f"Profile ({name} goal missed): {prof['what']}, torch.profiler, wall {prof['wall_ms']:.1f} ms",
    ]
    if prof["stages"]:
        lines.append(
            "  stages: "
            + ", ".join(f"{s['name']} {s['ms']:.1f} ms ({s['percent']:.0f} %)" for s in prof["stages"])
        )
    rows = [[o["name"], f"{o['self_ms']:.1f}", f"{o['percent']:.1f}", o["calls"]] for o in prof["top_ops"]]
    lines += ["  " + line for line in table(["operator", "self ms", "% wall", "calls"], rows)]
    kinds = ", ".join(f"{k} {v:.0f} %" for k, v in prof["by_kind_percent"].items())
    lines.append(f"  by kind (self time, % of wall): {kinds}")
    lines.append(f"  wall time outside any operator (Python, dispatch): {prof['outside_ops_percent']:.0f} %")
    return lines


def cold_start_lines(cold: dict, load: dict) -> list[str]:
    lines = [
        "",
        f"5. Cold start: `vc convert in.wav out.wav` with the bundled model '{cold['model']}' in a new process "
        f"({cold['input']}), wall from interpreter start to exit, {cold['repeats']} runs after a warm-up "
        f"{busy(load)}",
        f"   median {cold['convert_median_s']:.2f} s, min {cold['convert_min_s']:.2f} s; of which importing "
        f"what vc convert imports (Python, torch, librosa, vc) alone: median {cold['imports_median_s']:.2f} s",
    ]
    if "idle_threads1_median_s" in cold:  # results from before the threads comparison lack it
        lines.append(
            "   --threads 1 / --threads 2, median wall: idle "
            f"{cold['idle_threads1_median_s']:.2f} / {cold['idle_threads2_median_s']:.2f} s; "
            "beside one busy process per core "
            f"{cold['busy_threads1_median_s']:.2f} / {cold['busy_threads2_median_s']:.2f} s"
        )
    return lines


def serve_lines(serve: dict, load: dict) -> list[str]:
    rows = [
        [level["clients"], level["requests"], level.get("refused", 0), f"{level['p50_s']:.2f}",
         f"{level['p95_s']:.2f}", f"{level['requests_per_minute']:.1f}", _mb(level.get("peak_memory_mb"))]
        for level in serve["levels"]
    ]  # fmt: skip
    lines = [
        "",
        f"6. `vc serve` with the bundled model, a {serve['input_seconds']:g} s recording per request "
        f"{busy(load)}; cold start until the page answers: {serve['cold_start_s']:.2f} s; memory after "
        f"the first conversion: {_mb(serve.get('memory_after_first_mb'))} MB",
        *table(
            ["clients", "answered", "refused", "p50 [s]", "p95 [s]", "requests/min", "peak memory [MB]"],
            rows,
            left=0,
        ),
    ]
    if "bombs" in serve:
        bombs = serve["bombs"]
        lines.append(
            f"{bombs['clients']} clients at once posting a 1.1 MB FLAC of 2 h of 48 kHz silence: "
            f"{bombs['refused_413']} refused (413) in {bombs['wall_s']:.2f} s; peak memory "
            f"{_mb(bombs['peak_memory_mb'])} MB"
        )
    if "long" in serve:
        long = serve["long"]
        lines.append(
            f"{long['clients']} clients at once posting 119 s of speech: {long['answered']} answered in "
            f"{long['wall_s']:.1f} s; peak memory {_mb(long['peak_memory_mb'])} MB"
        )
    return lines


def vocoder_lines(voc: dict, load: dict) -> list[str]:
    rows = [
        [c["vocoder"], c["threads"], c["batch_size"], f"{c['rtf']:.3f}", f"{c['peak_rss_mb']:.0f}",
         f"{c['load_seconds']:.2f}"]
        for c in voc["cells"]
    ]  # fmt: skip
    lines = [
        "",
        f"7. Vocoders: the whole conversion's RTF with each ({voc['cells'][0]['utterances'] if voc['cells'] else 0} "
        f"eval utterances, {voc['model']}) {busy(load)}",
        *table(["vocoder", "threads", "batch", "RTF", "peak memory [MB]", "load [s]"], rows, left=1),
    ]
    for name, cold in voc["cold_start"].items():
        lines.append(
            f"   cold start `vc convert --vocoder {name}` (3 s input): median {cold['median_s']:.2f} s, "
            f"min {cold['min_s']:.2f} s ({cold['repeats']} runs)"
        )
    lines += [f"   skipped: {why}" for why in voc["skipped"]]
    return lines


def _mb(value) -> str:
    return "-" if value is None else f"{value:.0f}"


def scoring_lines(scoring: dict, load: dict) -> list[str]:
    rows = [
        [name if f.get("default", True) else f"{name} (only when asked for)", f"{f['files']}", f"{f['seconds']:.1f}", f"{f['per_file_s']:.3f}", f"{f['main_job_s'] / 60:.1f}",
         ", ".join(f"{k} {v:.2f}" for k, v in f["scores"].items())]
        for name, f in scoring["families"].items()
    ]  # fmt: skip
    lines = [
        "",
        f"8. Scoring: each metric family alone, the natural target's eval files, {scoring['workers']} workers, "
        f"cache cold {busy(load)}",
        *table(
            [
                "family",
                "files",
                "wall [s]",
                "s/file",
                f"main job [min] ({scoring['main_job_files']} files)",
                "scores",
            ],
            rows,
            left=1,
        ),  # fmt: skip
    ]
    return lines + [f"   not measured: {why}" for why in scoring["missing"]]


def render(results: dict) -> str:
    lines = header_lines(results)
    writers = {
        "convert": convert_lines,
        "griffinlim": griffinlim_lines,
        "training": training_lines,
        "cold_start": cold_start_lines,
        "serve": serve_lines,
        "vocoder": vocoder_lines,
        "scoring": scoring_lines,
    }
    for name, write in writers.items():
        if name in results:
            lines += write(results[name], results["background_by_section"][name])
    lines += goal_lines(results["goals"], results["profiles"])
    return "\n".join(lines)
