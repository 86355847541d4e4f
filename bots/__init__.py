"""Computer opponents: search, per-game evaluation, levels, and the clients that seat them."""
