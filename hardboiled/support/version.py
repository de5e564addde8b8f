"""hardboiled's version, in the lowest layer: the stages read it from here
(the package's __init__ re-exports it, and imports the API lazily)."""

VERSION = "0.1.0"
