"""Translation validation: the reference interpreter (``interp``), random
inputs and the comparison (``compare``), and running generated code
(``run``)."""
