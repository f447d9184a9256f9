"""The files a trained model lives in: checkpoints, the companion networks beside them, exported and
averaged model files, and the models shipped in the package (pretrained/)."""
