"""egglog rule files (shipped as package data)."""
