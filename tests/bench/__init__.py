"""Tests of the scripts in bench/."""
