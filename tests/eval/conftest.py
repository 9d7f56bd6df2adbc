"""The evaluation harnesses (LoCoMo, LongMemEval, the labelled extraction splits) on
small slices of their data."""
