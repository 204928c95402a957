"""The transforms of the IR: forward mode (jvp), reverse mode (vjp) and batching (vmap)."""
