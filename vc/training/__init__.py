"""Training: the trainer (budget, schedule, checkpoints, resume, DDP, TensorBoard), its data, losses,
augmentation and monitor; durations from the attention model; the companion networks' trainers."""
