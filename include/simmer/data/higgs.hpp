#pragma once
/// \file
/// The UCI HIGGS data (Baldi, Sadowski & Whiteson 2014): a CSV reader for the real file, a
/// synthetic generator of the same shape, and a writer of that format.
///
/// Format: no header; each line is the label (0 = background, 1 = signal, written as e.g.
/// "1.000000000000000000e+00") and 28 features, comma separated: 21 "low-level" kinematic
/// features (lepton, missing energy, four jets) and 7 "high-level" invariant masses.

#include <cstdint>
#include <string>
#include <vector>

#include "simmer/data/dataset.hpp"

namespace simmer::data {

/// Features per HIGGS row (the label is one more field).
inline constexpr Index kHiggsFeatures = 28;

/// The 28 feature names of the UCI description, in file order: lepton_pT, lepton_eta,
/// lepton_phi, missing_energy_magnitude, missing_energy_phi, then jet<k>_pt, jet<k>_eta,
/// jet<k>_phi, jet<k>_b-tag for k = 1..4, then m_jj, m_jjj, m_lv, m_jlv, m_bb, m_wbb, m_wwbb.
const std::vector<std::string>& higgs_feature_names();

/// Reads the first `max_rows` data lines (0: all) of a HIGGS CSV file, plain or gzip-compressed
/// (read through zlib, so HIGGS.csv.gz needs no unpacking). The file is streamed and parsed
/// with std::from_chars, so reading a prefix stops early and memory is the data set's own.
/// Blank lines are skipped; CRLF endings and blanks around fields are accepted. Returns a
/// 2-class classification data set: x [rows][28], y one-hot [rows][2], labels 0/1,
/// class_names {"background", "signal"}, target_names {"label"}.
/// Errors (simmer::Error, "<path>:<line>: " first): file unreadable, a line without 29
/// fields, a field that is empty, not a number, not finite or beyond a double (naming the field
/// by number and name), a label other than 0 or 1, a file with no data lines.
Dataset read_higgs_csv(const std::string& path, std::int64_t max_rows = 0);

/// Synthetic HIGGS-like data, deterministic in `seed`: the same (rows, seed) always gives the
/// same bits, and the first k rows of any call are the same for every rows >= k. Row by row
/// from Rng(seed), in this order of draws:
///  - label s ~ Bernoulli(0.53) (HIGGS is ~53 % signal): s = 1 when uniform() < 0.53;
///  - lepton: pT = exp(-0.1 + 0.5 z), eta = clamp(z, -2.5, 2.5), phi ~ U(-pi, pi);
///  - missing energy: magnitude = exp(-0.1 + 0.5 z), phi ~ U(-pi, pi) (eta taken as 0 below);
///  - jet k = 1..4: pt = exp(-0.1 + 0.5 z), eta = clamp(z, -2.5, 2.5), phi ~ U(-pi, pi),
///    b-tag in {0, 1.1, 2.2} with probabilities (0.6, 0.25, 0.15) for background and
///    (0.4, 0.3, 0.3) for signal (one uniform draw);
///  - masses from the massless pair mass m2(a, b) = 2 pT_a pT_b (cosh(eta_a - eta_b) -
///    cos(phi_a - phi_b)): m_jj = sqrt(m2(j1,j2)), m_jjj = sqrt(sum of m2 over pairs of
///    j1..j3), m_lv = sqrt(m2(l,v)), m_jlv = sqrt(sum over pairs of j1, l, v), m_bb =
///    sqrt(m2(j3,j4)), m_wbb = sqrt(sum over pairs of j1..j4), m_wwbb = sqrt(sum over pairs of
///    l, v, j1..j4); each then observed as ((1 - 0.4 s) m + 0.4 s M) exp(0.1 z) with
///    M = (1.6, 3.2, 1.4, 2.9, 1.6, 4.8, 7.5), near each mass's background median: signal
///    masses are pulled toward a "resonance", which changes their spread more than their mean.
/// z is a fresh standard normal each time (Rng::normal). The label is learnable but not
/// trivially: trained on 20000 rows and tested on 20000 more (seed 11), a logistic regression
/// reaches 68 % accuracy and a 2x64 tanh network (full-batch Adam) 79 %.
/// Throws simmer::Error for rows < 1.
Dataset make_synthetic_higgs(std::int64_t rows, std::uint64_t seed);

/// Writes `d` in the HIGGS CSV format: the label as "0.000000000000000000e+00" or
/// "1.000000000000000000e+00", the features in the shortest form that reads back to the same
/// double, so read_higgs_csv returns exactly `d`'s x and labels. A path ending in ".gz" is
/// written gzip-compressed. Throws simmer::Error naming the path when `d` is not a
/// classification set with 28 features and a 0/1 label per row, a feature is not finite, or
/// the file cannot be written.
void write_higgs_csv(const Dataset& d, const std::string& path);

}  // namespace simmer::data
