"""Transformations of the IR: each returns a new model."""
