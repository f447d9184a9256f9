"""Training: the one loop (budget, schedule, checkpoints, resume, DDP, TensorBoard) and its jobs (the
model kinds', the companion networks', the phone classifier's), their data, losses, augmentation and
monitor; durations from the attention model, DTW and the transcripts' phones."""
