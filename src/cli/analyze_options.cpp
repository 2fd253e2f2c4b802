#include "simmer/cli/analyze_options.hpp"

#include <boost/program_options.hpp>

#include <cmath>
#include <cstdlib>
#include <sstream>

#include "simmer/core/error.hpp"

namespace simmer::cli {
namespace {

namespace po = boost::program_options;

const char* const kOverview =
    "Usage: simmer_analyze COMMAND [options] ARCHIVE...\n"
    "Reads simmer_mpi archives (HDF5). Commands:\n"
    "  summary RUN.h5                          configuration, sizes, baseline vs ensemble metrics,\n"
    "                                          trajectory health (T_kin per stage, H_ext drift,\n"
    "                                          split-R-hat and ESS of the sample loss)\n"
    "  predict RUN.h5 --points FILE.csv        every stored network on new inputs (raw units);\n"
    "                                          under mpirun the draws are split over the ranks\n"
    "  merge A.h5 B.h5 ... -o ALL.h5           combine the archives of a seed study\n"
    "  export RUN.h5 --what trace|samples|ensemble   tidy CSV tables\n"
    "  export RUN.h5 --what inference-data --out OUT.nc   ArviZ's InferenceData (netCDF-4)\n"
    "  compare RUN.h5                          PSIS-LOO and WAIC of each ladder rung (model choice)\n"
    "  verify RUN.h5                           read every dataset back and check its checksums;\n"
    "                                          exit code 1 when one is damaged\n"
    "`simmer_analyze COMMAND --help` describes each. Errors: one line on stderr, exit code 2.\n";

struct Command {
  const char* name;
  const char* usage;
  const char* about;
};

const Command kCommands[] = {
    {"summary", "simmer_analyze summary RUN.h5",
     "Prints the run's configuration highlights, sizes, the baseline-vs-ensemble table of /metrics\n"
     "and each trajectory's health: the mean kinetic temperature of its stored draws at each\n"
     "temperature stage against the target T, the relative drift of H_ext over the last stage, and\n"
     "the split-R-hat and effective sample size of /sample_stats/loss across trajectories (n/a\n"
     "with fewer than 2 trajectories of 4 stored draws). First, a DAMAGED line for each problem verify\n"
     "would find in what summary reads (all but the stored draws); then the exit code is 1."},
    {"predict",
     "simmer_analyze predict RUN.h5 --points FILE.csv [--out OUT.csv] [--quantiles LIST] [--candidate NAME] "
     "[--keep COLUMNS] [--digits N] [--allow-incomplete]",
     "Evaluates the networks of the run's ensemble on the rows of FILE.csv: every stored network\n"
     "(/posterior/params) of its simmering stage, or of the candidate a ladder chose (a rung's\n"
     "draws, or the deep ensemble's /baseline/params); --candidate picks another (deep_ensemble,\n"
     "rung_<k>, all: every stored network, or stacked: every candidate's networks, each candidate\n"
     "weighing its stacking weight in /selection). FILE.csv's header\n"
     "names the archive's feature columns (/data/feature_names) in any order, in\n"
     "raw units; its other columns (an id, a name) are copied to the output after 'point' (--keep).\n"
     "Inputs are scaled with the archive's /data/scaling and regression outputs\n"
     "un-scaled, as in the run. Output CSV, one row per point (docs/ANALYZE.md explains each column):\n"
     "  classification: point, prediction, prediction_class (arg max of the mean probability),\n"
     "                  probability_<class>... (the networks' mean softmax), entropy, mutual_information\n"
     "                  (nats), fraction_<class>... (vote fractions), vote_prediction, vote_prediction_class,\n"
     "                  outside_training_range\n"
     "  regression:     point, then per output mean_<y>, sd_<y> (predictive: networks and noise),\n"
     "                  sd_model_<y> (the networks' spread), q<p>_<y>... (quantiles of the mixture of\n"
     "                  N(prediction, noise variance) over the networks), then outside_training_range\n"
     "outside_training_range counts the point's features outside the training data's [min, max]\n"
     "widened by 10 % of the range on each side (0 = inside): a range check, not a density estimate.\n"
     "A point whose scaled value or any network's output is not finite is an error (exit 2, nothing\n"
     "written). An unfinished run's archive is refused unless --allow-incomplete.\n"
     "Under mpirun the draws are split over the ranks; the output does not depend on their number."},
    {"merge", "simmer_analyze merge A.h5 B.h5 ... -o ALL.h5 [--overwrite]",
     "Combines archives of one study that differ only in run.seed (and run.trajectories or how\n"
     "the run was carried out) into one archive, chains renumbered 0..N-1 in input order:\n"
     "/posterior, /sample_stats, /trace, /initial and /baseline concatenated, /ensemble\n"
     "recomputed (votes summed; regression mean/variance combined), /metrics recomputed.\n"
     "Ladder runs (simmer.ladder) at the same rung temperatures: each rung pooled in\n"
     "/ladder/rung_<k>, and the choice among the candidates made again on the pooled validation\n"
     "rows (/selection; /ensemble is the rung chosen).\n"
     "data.split_seed may differ only when the data are identical."},
    {"export",
     "simmer_analyze export RUN.h5 --what trace|samples|ensemble|metrics|inference-data [--params] "
     "[--quantiles LIST] [--log-likelihood] [--predictive] [--rung K] [--allow-incomplete] [--out FILE]",
     "Writes one tidy table (one observation per row, a header row):\n"
     "  trace:    chain,phase,step,temperature,train_loss,test_loss,distance,path_length,param_rms,\n"
     "            param_max_abs (phase 0 = Adam, 1 = simmering; distance and path length from the\n"
     "            simmering start, NaN during Adam)\n"
     "  samples:  chain,draw,step,temperature,loss,kinetic_temperature,extended_energy\n"
     "            (--params: chain,draw,param,value for every stored network instead)\n"
     "  ensemble: set,row, then classification: label,label_class (the truth; empty for points),\n"
     "            prediction,prediction_class (arg max of the mean probability),probability_<class>...,\n"
     "            entropy,mutual_information (scored sets only; nan for points),fraction_<class>...,\n"
     "            vote_prediction,vote_prediction_class; regression per output: y_<y> (the truth),\n"
     "            mean_<y>,sd_<y> (predictive),sd_model_<y>,q<p>_<y>... (--quantiles)\n"
     "  metrics:  candidate,split,metric,value: every number of /metrics and of each ladder rung\n"
     "            (candidate ensemble = the run's, deep_ensemble, baseline (the Adam networks' mean\n"
     "            and sd: metric accuracy_mean ...), rung_<k>, stacked (a ladder's stacked candidates),\n"
     "            or run for run-wide numbers, split empty)\n"
     "  inference-data (--out OUT.nc, a netCDF-4 file): ArviZ's InferenceData groups posterior (one\n"
     "            variable per tensor of /model, e.g. layer0_dense_kernel [chain, draw,\n"
     "            layer0_dense_kernel_dim_0, ..._dim_1], in the run's stored precision; a ladder adds a\n"
     "            rung dimension, with its temperatures as the coordinate rung_temperature: never\n"
     "            temperatures along draw; --rung K exports rung K alone as a plain (chain, draw)\n"
     "            posterior), sample_stats (lp, step_size, diverging, temperature, extended_energy (the\n"
     "            thermostat's H_ext, not an HMC energy), kinetic_temperature, loss, step),\n"
     "            observed_data and constant_data (the training rows); --log-likelihood adds\n"
     "            log_likelihood (y [chain, draw, observation]: every draw on every training row);\n"
     "            --predictive adds posterior_predictive (y: one outcome sampled per draw and training\n"
     "            row: the class from the softmax, or f(x) plus N(0, s^2) noise), predictions (the same\n"
     "            on the test rows) and constant_data_predictions (the test inputs).\n"
     "            arviz.from_netcdf(OUT.nc) reads it\n"
     "An unfinished run's archive (status not complete) is refused unless --allow-incomplete\n"
     "(simmer_analyze summary tells what happened to it and how to resume it)."},
    {"compare", "simmer_analyze compare RUN.h5 [--out FILE.csv] [--allow-incomplete]",
     "Model comparison across a run's candidates: for each rung of a ladder (or the one simmering\n"
     "stage) the log-likelihood of every training row under every stored draw, then PSIS-LOO\n"
     "(Pareto-smoothed importance sampling leave-one-out; k-hat per row, a warning above\n"
     "min(1 - 1/log10(draws), 0.7)) and WAIC, as ArviZ computes them (r_eff = 1), each with its\n"
     "standard error, the difference to the best elpd_loo with that difference's standard error\n"
     "(dse) and az.compare's stacking weight of each candidate's leave-one-out densities, beside\n"
     "the validation loss that chose the run's ensemble (/selection). Regression\n"
     "uses the noise sd T_Bayes assumed. They estimate the posterior predictive's fit to new rows\n"
     "only at T = T_Bayes with a prior; at other rungs they describe the tempered law.\n"
     "--out writes the table as CSV."},
    {"verify", "simmer_analyze verify RUN.h5",
     "Reads every dataset of the archive back in full, one chunk at a time, with HDF5's Fletcher-32\n"
     "checking on (simmer_mpi stores a checksum with every chunk of every dataset; attributes and\n"
     "HDF5's own metadata have none). Prints each damaged dataset by name with the chunks that fail\n"
     "(their coordinates and byte offsets in the file), each dataset stored without a checksum\n"
     "(archives written before simmer stored checksums: read back, but not verifiable), then one\n"
     "line: 'N datasets, X MB, all checksums good'. The attributes that hold scores and choices are\n"
     "compared with their checksummed copies, and the choices with each other; each trajectory's\n"
     "stored draws and /trace rows with the digests the run recorded of them (/checksums), and each\n"
     "dataset written whole with its content_fnv1a64 attribute (a chunk zeroed with its checksum\n"
     "reads back without an error, but not with these digests). It reads in a child process, so\n"
     "that HDF5 crashing on damaged metadata is reported as damage.\n"
     "Exit code: 0 nothing damaged; 1 something is damaged, HDF5 cannot open the file or crashes; 2 the file\n"
     "is missing, not HDF5 or not a simmer archive, or a usage error."},
};

const Command* find_command(const std::string& name) {
  for (const Command& c : kCommands) {
    if (name == c.name) return &c;
  }
  return nullptr;
}

std::vector<double> parse_quantiles(const std::string& text) {
  std::vector<double> out;
  std::stringstream in(text);
  std::string part;
  while (std::getline(in, part, ',')) {
    if (part.empty()) continue;
    char* end = nullptr;
    const double q = std::strtod(part.c_str(), &end);
    if (end == nullptr || *end != '\0' || !(q >= 0.0 && q <= 1.0)) {
      throw Error("--quantiles '" + text + "': '" + part + "' is not a probability in [0, 1]");
    }
    out.push_back(q);
  }
  return out;
}

po::options_description options_of(const std::string& command) {
  po::options_description desc("Options", 100, 40);
  desc.add_options()("help,h", "print this help and exit");
  if (command == "predict") {
    desc.add_options()                                                                                  //
        ("points", po::value<std::string>()->value_name("FILE.csv"), "inputs to evaluate (raw units)")  //
        ("out", po::value<std::string>()->value_name("OUT.csv"), "write here instead of stdout")        //
        ("quantiles", po::value<std::string>()->value_name("LIST")->default_value("0.025,0.5,0.975"),
         "regression: quantiles of the predictive mixture per output (comma-separated; '' for none)")       //
        ("allow-incomplete", "use an unfinished run's archive (status not complete): its networks so far")  //
        ("keep", po::value<std::string>()->value_name("COLUMNS")->default_value("*"),
         "columns of FILE.csv copied to the output after 'point' (an id, a name): comma-separated, * (every "
         "column that is not a feature) or '' (none)")  //
        ("digits", po::value<int>()->value_name("N")->default_value(7),
         "significant digits of the numbers written, 1..17 (17: they read back to the same double)")  //
        ("candidate", po::value<std::string>()->value_name("NAME"),
         "the networks to evaluate: the run's ensemble (default: /metrics 'ensemble'), deep_ensemble (the "
         "Adam end points), rung_<k> (a ladder's rung) or all (every stored network)");
  } else if (command == "merge") {
    desc.add_options()                                                                      //
        ("output,o", po::value<std::string>()->value_name("ALL.h5"), "the merged archive")  //
        ("overwrite", "replace an existing output");
  } else if (command == "compare") {
    desc.add_options()                                                                                       //
        ("allow-incomplete", "use an unfinished run's archive (status not complete): what it holds so far")  //
        ("out", po::value<std::string>()->value_name("FILE.csv"), "also write the table as CSV");
  } else if (command == "export") {
    desc.add_options()  //
        ("what", po::value<std::string>()->value_name("TABLE"),
         "trace | samples | ensemble | metrics | inference-data")                    //
        ("params", "with --what samples: the parameters as chain,draw,param,value")  //
        ("quantiles", po::value<std::string>()->value_name("LIST")->default_value("0.025,0.975"),
         "with --what ensemble, regression: quantiles of the predictive mixture per output")                 //
        ("allow-incomplete", "use an unfinished run's archive (status not complete): what it holds so far")  //
        ("log-likelihood",
         "with --what inference-data: the log_likelihood group (every stored draw on every "
         "training row: draws x rows values)")  //
        ("predictive",
         "with --what inference-data: posterior_predictive and predictions (one sampled outcome per "
         "draw and training / test row)")  //
        ("rung", po::value<int>()->value_name("K"),
         "with --what inference-data of a ladder run: rung K alone, as a plain (chain, draw) posterior")  //
        ("out", po::value<std::string>()->value_name("FILE.csv"), "write here instead of stdout");
  }
  return desc;
}

std::string help_of(const Command& c) {
  std::ostringstream out;
  out << "Usage: " << c.usage << "\n\n" << c.about << "\n\n" << options_of(c.name);
  return out.str();
}

}  // namespace

AnalyzeInvocation parse_analyze_command_line(int argc, const char* const* argv) {
  AnalyzeInvocation inv;
  for (int i = 0; i < argc; ++i) {
    if (i > 0) inv.command_line += ' ';
    inv.command_line += argv[i];
  }
  if (argc < 2) throw Error("no command given: summary, predict, merge, export, compare or verify (see --help)");
  const std::string first = argv[1];
  if (first == "--help" || first == "-h" || first == "help") {
    inv.help = true;
    inv.help_text = kOverview;
    if (first == "help" && argc > 2 && find_command(argv[2]) != nullptr)
      inv.help_text = help_of(*find_command(argv[2]));
    return inv;
  }
  const Command* command = find_command(first);
  if (command == nullptr) {
    throw Error("unknown command '" + first + "': use summary, predict, merge, export, compare or verify (see --help)");
  }
  inv.command = first;
  po::options_description desc = options_of(first);
  po::options_description all;
  all.add(desc);
  all.add_options()("archive", po::value<std::vector<std::string>>());
  po::positional_options_description positional;
  positional.add("archive", -1);
  po::variables_map vm;
  try {
    const int style = po::command_line_style::default_style & ~po::command_line_style::allow_guessing;
    po::store(po::command_line_parser(argc - 1, argv + 1).options(all).positional(positional).style(style).run(), vm);
    po::notify(vm);
  } catch (const po::error& e) {
    throw Error(first + ": " + e.what() + " (see simmer_analyze " + first + " --help)");
  }
  if (vm.count("help") != 0) {
    inv.help = true;
    inv.help_text = help_of(*command);
    return inv;
  }
  if (vm.count("archive") != 0) inv.archives = vm["archive"].as<std::vector<std::string>>();
  const auto text = [&](const char* key) { return vm.count(key) != 0 ? vm[key].as<std::string>() : std::string(); };
  inv.output = first == "merge" ? text("output") : text("out");
  if (first == "merge") {
    inv.overwrite = vm.count("overwrite") != 0;
    if (inv.archives.size() < 2) throw Error("merge: needs at least two archives: merge A.h5 B.h5 ... -o ALL.h5");
    if (inv.output.empty()) throw Error("merge: the output is missing: -o ALL.h5");
    return inv;
  }
  if (inv.archives.size() != 1) {
    throw Error(first + ": needs exactly one archive (got " + std::to_string(inv.archives.size()) +
                "): " + command->usage);
  }
  if (first == "predict") {
    inv.points = text("points");
    if (inv.points.empty()) throw Error("predict: --points FILE.csv is missing");
    inv.quantiles = parse_quantiles(text("quantiles"));
    inv.candidate = text("candidate");
    inv.allow_incomplete = vm.count("allow-incomplete") != 0;
    inv.keep.clear();
    std::stringstream keep(text("keep"));
    for (std::string column; std::getline(keep, column, ',');) {
      if (!column.empty()) inv.keep.push_back(column);
    }
    inv.digits = vm["digits"].as<int>();
    if (inv.digits < 1 || inv.digits > 17) {
      throw Error("predict: --digits " + std::to_string(inv.digits) + " must be in 1..17");
    }
  } else if (first == "compare") {
    inv.allow_incomplete = vm.count("allow-incomplete") != 0;
  } else if (first == "export") {
    inv.what = text("what");
    inv.quantiles = parse_quantiles(text("quantiles"));
    inv.allow_incomplete = vm.count("allow-incomplete") != 0;
    inv.log_likelihood = vm.count("log-likelihood") != 0;
    inv.predictive = vm.count("predictive") != 0;
    inv.params = vm.count("params") != 0;
    if (inv.predictive && inv.what != "inference-data")
      throw Error("export: --predictive goes with --what inference-data");
    if (inv.what != "trace" && inv.what != "samples" && inv.what != "ensemble" && inv.what != "metrics" &&
        inv.what != "inference-data") {
      throw Error("export: --what '" + inv.what + "' must be trace, samples, ensemble, metrics or inference-data");
    }
    if (vm.count("rung") != 0) {
      inv.rung = vm["rung"].as<int>();
      if (inv.what != "inference-data") throw Error("export: --rung goes with --what inference-data");
      if (inv.rung < 0) throw Error("export: --rung " + std::to_string(inv.rung) + " must be a rung index >= 0");
    }
    if (inv.log_likelihood && inv.what != "inference-data") {
      throw Error("export: --log-likelihood goes with --what inference-data");
    }
    if (inv.params && inv.what != "samples") throw Error("export: --params goes with --what samples");
  }
  return inv;
}

}  // namespace simmer::cli
