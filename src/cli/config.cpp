// The configuration's front end: the INI reader, the command line, --help, the effective INI and
// the key roles, all generated from the key table (config_table.cpp); the rules are in
// config_rules.cpp, the text conversions in config_text.cpp.
#include "simmer/cli/config.hpp"

#include <boost/program_options.hpp>

#include <algorithm>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "config_keys.hpp"
#include "config_text.hpp"
#include "simmer/core/error.hpp"

namespace simmer::cli {
namespace {

namespace po = boost::program_options;
using detail::all_key_names;
using detail::BadValue;
using detail::find_key;
using detail::ini_quote;
using detail::ini_value;
using detail::Key;
using detail::keys;
using detail::kSections;
using detail::read_file;
using detail::SectionInfo;
using detail::suggestion;
using detail::trim;

// ---------------------------------------------------------------------------------------------
// Program_options descriptions (help and command line).

po::options_description general_options() {
  po::options_description general("General options", 100, 50);
  general.add_options()  //
      ("help,h", po::value<std::string>()->implicit_value("")->value_name("TOPIC"),
       "print this help and exit; --help KEY (simmer.steps, or steps) or --help SECTION (simmer) "
       "prints just that")                                               //
      ("config", po::value<std::string>()->value_name("FILE"),           //
       "INI configuration file ([section] headers, key = value lines)")  //
      ("output", po::value<std::string>()->value_name("PATH"),           //
       "HDF5 archive path (same as --run.output)")                       //
      ("overwrite", "replace an existing output archive")                //
      ("estimate",
       "print the archive size and peak memory per rank the run needs (and "
       "whether the output's file system has the room), then exit without running")  //
      ("resume", po::value<std::string>()->value_name("ARCHIVE"),                    //
       "continue the run of ARCHIVE from its last checkpoint (ARCHIVE.ckpt)")        //
      ("print-config",
       "print the effective configuration (the defaults, the file and the command line combined: "
       "every key with the value the run would use) as INI, then exit without running");
  return general;
}

/// `desc` with the keys that `pick` selects, each with its default, syntax and meaning.
template <class Pick>
void add_keys(po::options_description& desc, Pick pick) {
  const Config defaults;
  for (const Key& k : keys()) {
    if (!pick(k)) continue;
    const std::string shown = k.get(defaults, false);
    desc.add_options()(
        k.full().c_str(),
        po::value<std::string>()->default_value(shown, shown.empty() ? "\"\"" : shown)->value_name(k.value_name),
        k.meaning.c_str());
  }
}

po::options_description section_options(const SectionInfo& section) {
  po::options_description desc(section.caption, 100, 50);
  add_keys(desc, [&](const Key& k) { return k.section == section.name; });
  return desc;
}

/// --help TOPIC: a section's keys ("simmer" or "[simmer]"), or the keys named TOPIC ("simmer.steps",
/// or "steps" in whichever section has it).
std::string topic_help(const std::string& topic) {
  std::ostringstream out;
  for (const SectionInfo& s : kSections) {
    if (topic == s.name || topic == "[" + std::string(s.name) + "]") {
      out << section_options(s);
      return out.str();
    }
  }
  po::options_description desc("", 100, 50);
  bool found = false;
  add_keys(desc, [&](const Key& k) {
    const bool match = k.full() == topic || k.name == topic;
    found = found || match;
    return match;
  });
  if (!found) {
    std::vector<std::string> names = all_key_names();
    for (const SectionInfo& s : kSections) names.emplace_back(s.name);
    throw Error("--help: '" + topic + "' is neither a key nor a section" + suggestion(topic, names) +
                "; sections are data, model, adam, simmer, ensemble, run (--help alone lists every key)");
  }
  out << desc;
  return out.str();
}

[[noreturn]] void ini_error(const std::string& origin, std::size_t line, const std::string& why) {
  throw Error(origin + ":" + std::to_string(line) + ": " + why);
}

}  // namespace

// ---------------------------------------------------------------------------------------------

std::size_t apply_ini(const std::string& text, const std::string& origin, Config& config) {
  return apply_ini_lines(text, origin, config).size();
}

std::map<std::string, std::size_t> apply_ini_lines(const std::string& text, const std::string& origin, Config& config) {
  std::vector<std::string> section_names;
  for (const SectionInfo& s : kSections) section_names.emplace_back(s.name);

  std::map<std::string, std::size_t> first_line;  // full key -> line it was set on
  std::string section;
  std::istringstream in(text);
  std::string raw;
  std::size_t line = 0;
  while (std::getline(in, raw)) {
    ++line;
    if (!raw.empty() && raw.back() == '\r') raw.pop_back();
    if (line == 1 && raw.rfind("\xEF\xBB\xBF", 0) == 0) raw.erase(0, 3);  // UTF-8 BOM
    const std::string trimmed = trim(raw);
    if (trimmed.empty() || trimmed.front() == '#' || trimmed.front() == ';') continue;

    if (trimmed.front() == '[') {
      if (trimmed.back() != ']') {
        ini_error(origin, line, "malformed section header '" + trimmed + "' (expected [name])");
      }
      const std::string name = trim(trimmed.substr(1, trimmed.size() - 2));
      if (std::find(section_names.begin(), section_names.end(), name) == section_names.end()) {
        ini_error(origin, line,
                  "unknown section [" + name + "]" + suggestion(name, section_names) +
                      "; sections are [data] [model] [adam] [simmer] [ensemble] [run]");
      }
      section = name;
      continue;
    }

    const std::size_t eq = trimmed.find('=');
    const std::string name = eq == std::string::npos ? "" : trim(trimmed.substr(0, eq));
    std::string value;
    if (name.empty() || !ini_value(trimmed.substr(eq + 1), value)) {
      ini_error(origin, line, "malformed line '" + trimmed + "' (expected key = value)");
    }
    if (section.empty()) {
      ini_error(origin, line, "key '" + name + "' outside of any [section]" + suggestion(name, all_key_names()));
    }

    const std::string full = section + "." + name;
    const Key* key = find_key(full);
    if (key == nullptr) {
      ini_error(origin, line, "unknown key '" + full + "'" + suggestion(full, all_key_names()));
    }
    const auto [it, inserted] = first_line.emplace(full, line);
    if (!inserted) {
      ini_error(origin, line, "duplicate key '" + full + "' (first set on line " + std::to_string(it->second) + ")");
    }
    try {
      key->set(config, value);
    } catch (const BadValue& e) {
      ini_error(origin, line, full + " = '" + value + "': " + e.what());
    }
  }
  return first_line;
}

Invocation parse_command_line(int argc, const char* const* argv, const Config* base) {
  Invocation inv;
  if (base != nullptr) inv.config = *base;
  for (int i = 0; i < argc; ++i) {
    if (i > 0) inv.command_line += ' ';
    inv.command_line += argv[i];
  }

  po::options_description all;
  all.add(general_options());
  for (const SectionInfo& s : kSections) all.add(section_options(s));
  // Stray words are collected so the error can name them.
  po::options_description hidden;
  hidden.add_options()("positional-arguments", po::value<std::vector<std::string>>());
  all.add(hidden);
  po::positional_options_description positional;
  positional.add("positional-arguments", -1);

  po::variables_map vm;
  try {
    // No abbreviations: "--simmer.T" must not silently mean "--simmer.T_target".
    const int style = po::command_line_style::default_style & ~po::command_line_style::allow_guessing;
    po::store(po::command_line_parser(argc, argv).options(all).positional(positional).style(style).run(), vm);
  } catch (const po::unknown_option& e) {
    std::string name = e.get_option_name();
    const std::string bare = name.rfind("--", 0) == 0 ? name.substr(2) : name;
    throw Error("command line: unknown option '" + name + "'" + suggestion(bare, all_key_names(), "--") +
                " (see --help)");
  } catch (const po::error& e) {
    throw Error(std::string("command line: ") + e.what());
  }

  if (vm.count("help") != 0) {
    // "--help=KEY", or "--help KEY" (the topic then arrives as the first stray word).
    std::string topic = vm["help"].as<std::string>();
    if (topic.empty() && vm.count("positional-arguments") != 0) {
      topic = vm["positional-arguments"].as<std::vector<std::string>>().front();
    }
    inv.help = true;
    inv.help_text = topic.empty() ? help_text() : topic_help(topic);
    return inv;
  }
  if (vm.count("positional-arguments") != 0) {
    const auto& words = vm["positional-arguments"].as<std::vector<std::string>>();
    throw Error("command line: unexpected argument '" + words.front() +
                "' (options are --config FILE and --section.key value; see --help)");
  }
  inv.overwrite = vm.count("overwrite") != 0;
  inv.estimate_only = vm.count("estimate") != 0;
  inv.print_config = vm.count("print-config") != 0;
  if (vm.count("resume") != 0) {
    inv.resume_path = vm["resume"].as<std::string>();
    if (inv.resume_path.empty()) throw Error("command line: --resume needs an archive name");
  }
  std::map<std::string, std::size_t> file_lines;  // the --config file's keys and their lines
  if (vm.count("config") != 0) {
    inv.config_given = true;
    inv.config_path = vm["config"].as<std::string>();
    if (inv.config_path.empty()) throw Error("command line: --config needs a file name");
    // A file that sets nothing (empty, or only comments and headers) would run the defaults'
    // sine job without a word: most likely the wrong file.
    file_lines = apply_ini_lines(read_file(inv.config_path), inv.config_path, inv.config);
    if (file_lines.empty()) {
      throw Error("config file '" + inv.config_path +
                  "' sets no keys (it is empty or holds only comments and section headers); name a "
                  "file with the run's [data], [model], ... keys (see --help)");
    }
  }

  const auto apply_override = [&inv](const Key& key, const std::string& option, const std::string& value) {
    try {
      key.set(inv.config, value);
    } catch (const BadValue& e) {
      throw Error("command line: " + option + " = '" + value + "': " + e.what());
    }
  };
  for (const Key& key : keys()) {
    const std::string full = key.full();
    const auto it = vm.find(full);
    if (it == vm.end() || it->second.defaulted()) continue;
    inv.config_given = true;
    apply_override(key, "--" + full, it->second.as<std::string>());
  }
  if (vm.count("output") != 0) {
    const auto run_output = vm.find("run.output");
    if (run_output != vm.end() && !run_output->second.defaulted()) {
      throw Error("command line: --output and --run.output both given: give one");
    }
    apply_override(*find_key("run.output"), "--output", vm["output"].as<std::string>());
  }
  // A value of the file's outside its key's own range: the file and line say where, before the
  // run's rules (validated) would name only the key. A value the command line replaced is not the file's.
  for (const auto& [full, line] : file_lines) {
    const auto it = vm.find(full);
    if (it != vm.end() && !it->second.defaulted()) continue;
    if (full == "run.output" && vm.count("output") != 0) continue;
    try {
      find_key(full)->check(inv.config);
    } catch (const Error& e) {
      ini_error(inv.config_path, line, e.what());
    }
  }
  return inv;
}

model::LossKind loss_of(const Config& c) {
  if (c.model.loss) return *c.model.loss;
  return c.data.task == data::Task::classification ? model::LossKind::cce : model::LossKind::mse;
}

train::Thermostat thermostat_of(const Config& c) {
  if (c.simmer.thermostat) return *c.simmer.thermostat;
  const SimmerConfig& s = c.simmer;
  const bool every_t_positive = !s.ladder.rungs.empty() || s.T_initial > 0.0;
  return s.temperature_unit == TemperatureUnit::posterior && s.mode != SimmerMode::adam && every_t_positive
             ? train::Thermostat::massive_nose_hoover_langevin
             : train::Thermostat::nose_hoover_chain;
}

std::string key_of(const std::string& field) {
  for (const Key& k : keys()) {
    if (std::find(k.fields.begin(), k.fields.end(), field) != k.fields.end()) return k.full();
  }
  return field;
}

KeyRole key_role(const std::string& key) {
  const Key* k = find_key(key);
  return k == nullptr ? KeyRole::science : k->role;
}

std::vector<std::string> config_differences(const Config& a, const Config& b, std::initializer_list<KeyRole> ignored) {
  std::vector<std::string> out;
  for (const Key& k : keys()) {
    if (std::find(ignored.begin(), ignored.end(), k.role) != ignored.end()) continue;
    const std::string va = k.get(a, false);
    const std::string vb = k.get(b, false);
    if (va != vb) out.push_back(k.full() + ": '" + va + "' vs '" + vb + "'");
  }
  return out;
}

std::string to_ini(const Config& config) {
  std::string out = "# simmer configuration: every key with its effective value\n";
  for (const SectionInfo& section : kSections) {
    out += "\n[";
    out += section.name;
    out += "]\n";
    for (const Key& k : keys()) {
      if (k.section != section.name) continue;
      const std::string value = ini_quote(k.get(config, true));
      out += k.name + (value.empty() ? " =\n" : " = " + value + "\n");
    }
  }
  return out;
}

std::vector<KeyInfo> describe_keys() {
  const Config defaults;
  std::vector<KeyInfo> out;
  for (const Key& k : keys()) {
    KeyInfo info;
    info.key = k.full();
    info.syntax = k.value_name;
    info.default_value = k.get(defaults, false);
    info.role = k.role;
    info.choices = k.choices;
    info.fills_member = static_cast<bool>(k.library_default);
    info.library_default = info.fills_member && k.library_default(defaults);
    info.own_default = k.own_default_reason;
    info.arrived = k.arrived;
    out.push_back(std::move(info));
  }
  return out;
}

std::string help_text() {
  std::ostringstream out;
  out << "Usage: simmer_mpi --config FILE [--section.key value ...] [--output PATH] "
         "[--overwrite] [--estimate]\n"
         "       simmer_mpi --resume ARCHIVE   (continue from ARCHIVE.ckpt, any number of ranks)\n"
         "       simmer_mpi --help KEY|SECTION (one key, e.g. simmer.steps or steps; or one section)\n\n"
         "Your own CSV needs only [data] path and target (and task = classification for class\n"
         "labels): the defaults are the recommended recipe (docs/YOUR_DATA.md). The paper's\n"
         "settings are in its job files, jobs/*.ini. --print-config shows every value a run uses.\n\n"
         "Values come from the defaults below, then the INI file (--config), then the command\n"
         "line: a later source overrides an earlier one. In the file, key 'section.key' is\n"
         "written 'key = value' under a [section] header; '#' or ';' start a comment line and\n"
         "' # ...' ends a value. Lists are comma-separated, e.g. --data.features "
         "sepal_width,petal_width.\n\n"
         "Temperature and the Bayesian posterior: simmering samples exp(-L/T). That is the\n"
         "posterior of the network's weights (flat prior, or the Gaussian of simmer.prior) when\n"
         "T = T_Bayes: sse with Gaussian noise sd s: T_Bayes = 2 s^2; mse over n training rows:\n"
         "2 s^2 / n; mean cross-entropy (cce, bce) over n rows: 1 / n. Larger T samples a wider\n"
         "(tempered) distribution. The run prints T in these units; simmer.temperature_unit =\n"
         "posterior gives the schedule in them.\n";
  // One description holding every group, so all sections share one aligned column.
  po::options_description all("", 100, 50);
  all.add(general_options());
  for (const SectionInfo& s : kSections) all.add(section_options(s));
  out << all;
  return out.str();
}

}  // namespace simmer::cli