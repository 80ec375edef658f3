"""`fpgagen sweep`: a grid of design points, each compiled and verified as a task on Dask."""
