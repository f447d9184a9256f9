"""Each job's section of the config, one module per job, named after the folder that reads it
(coqui TTS keeps each model's settings in a configs module the model imports, the same way).

section.py     what every section does: its checks, run when it is built
audio.py       audio: the signal's features (vc/audio/)
kinds.py       model: the settings every kind shares and each kind's own section (vc/kinds/)
inference.py   inference: the choices conversion makes (vc/inference/)
vocoders.py    vocoder: which vocoder, and each vocoder's own section (vc/vocoders/)
training.py    data, augment, train, mel2linear, postfilter: the trainers' (vc/training/)

These modules import no torch and nothing of vc but vc.errors: vc/config.py assembles them into one
Config, reads YAML into it and applies overrides, so a config is read without importing a model.
"""
