"""Tests of agents/alphazero/search/: the tree search and its selection maths."""
