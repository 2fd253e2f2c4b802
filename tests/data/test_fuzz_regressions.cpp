/// \file
/// Inputs the fuzzers (tests/fuzz) found crashing or misbehaving, kept as regression tests.
