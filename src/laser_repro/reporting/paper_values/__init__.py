"""Published values of the papers this project reproduces, as CSV files read with importlib.resources."""
