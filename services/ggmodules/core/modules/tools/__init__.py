"""The tools the suite publishes for the model, per kind (R8), and how a call becomes an operation."""
