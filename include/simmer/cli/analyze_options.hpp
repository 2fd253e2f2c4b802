#pragma once
/// \file
/// simmer_analyze's command line: a subcommand and its options, parsed with
/// Boost.Program_options (which lives in src/cli alone) into a plain struct.

#include <string>
#include <vector>

namespace simmer::cli {

struct AnalyzeInvocation {
  std::string command;                ///< summary | predict | merge | export | verify ("" with --help alone)
  std::vector<std::string> archives;  ///< positional archive paths
  std::string points;                 ///< predict --points
  std::string output;                 ///< predict/export --out, merge -o
  std::vector<double> quantiles;      ///< predict and export --quantiles
  bool allow_incomplete = false;      ///< predict and export --allow-incomplete
  bool log_likelihood = false;        ///< export --log-likelihood
  bool predictive = false;            ///< export --predictive
  std::string candidate;              ///< predict --candidate ("": the run's ensemble)
  std::vector<std::string> keep;      ///< predict --keep ({"*"}: every column that is not a feature)
  int digits = 7;                     ///< predict --digits
  std::string what;                   ///< export --what
  bool params = false;                ///< export --params
  int rung = -1;                      ///< export --rung (inference-data of one ladder rung; -1: every rung)
  bool overwrite = false;             ///< merge --overwrite
  bool help = false;                  ///< --help given: help_text holds the text
  std::string help_text;
  std::string command_line;  ///< argv joined with spaces (for provenance)
};

/// Parses `simmer_analyze COMMAND [options] ARCHIVE...`. Throws simmer::Error with a one-line
/// message naming the subcommand and the option or value at fault.
AnalyzeInvocation parse_analyze_command_line(int argc, const char* const* argv);

}  // namespace simmer::cli
