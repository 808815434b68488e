"""Matplotlib figures drawn from result tables (pandas DataFrames / CSV files); no training here."""
