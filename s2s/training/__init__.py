"""Training state in the shape of flax.training: `from s2s.training import train_state`."""
