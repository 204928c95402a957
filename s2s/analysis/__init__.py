"""Analyses of the IR: activity, aliases, liveness, recorded values, and shape classes."""
