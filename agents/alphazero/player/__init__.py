"""The player kind ``checkpoint``: a trained network choosing moves with tree search, its options and its guard."""
