"""Agents for Jungle, one folder a purpose: alphazero/ (self-play learning), alphabeta/ (the baseline), arena/ (tournaments, ratings, records), play/ (playing against them)."""
