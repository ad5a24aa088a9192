"""Benchmarks for wakeful: each prints its figures next to a baseline from the same run."""
