#include "simmer/parallel/progress.hpp"

#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>

namespace simmer::parallel {

std::string format_duration(double s) {
  char buf[32];
  if (s < 60)
    std::snprintf(buf, sizeof buf, "%.1fs", s);
  else if (s < 3600)
    std::snprintf(buf, sizeof buf, "%dm%02ds", static_cast<int>(s) / 60, static_cast<int>(s) % 60);
  else
    std::snprintf(buf, sizeof buf, "%dh%02dm", static_cast<int>(s) / 3600, (static_cast<int>(s) % 3600) / 60);
  return buf;
}

bool output_is_terminal() {
  const char* term = std::getenv("TERM");
  if (isatty(STDOUT_FILENO) == 0 || term == nullptr || *term == '\0' || std::string(term) == "dumb") {
    return false;
  }
  if (std::getenv("OMPI_COMM_WORLD_SIZE") == nullptr && std::getenv("PMIX_RANK") == nullptr) return true;
  char target[256] = {};
  const std::string link = "/proc/" + std::to_string(getppid()) + "/fd/1";
  const ssize_t n = readlink(link.c_str(), target, sizeof target - 1);
  if (n <= 0) return false;
  const std::string where(target, static_cast<std::size_t>(n));
  return where.rfind("/dev/pts/", 0) == 0 || where.rfind("/dev/tty", 0) == 0;
}

Progress::Progress(const run::RunOptions& options, int rank)
    : rank_(rank),
      tty_(options.progress == run::RunOptions::Progress::bar ||
           (options.progress == run::RunOptions::Progress::automatic && output_is_terminal())),
      interval_(options.progress_seconds) {}

double Progress::elapsed() const { return std::chrono::duration<double>(Clock::now() - start_).count(); }

bool Progress::due(bool force) {
  const double el = elapsed();
  if (!force && el - last_ < (tty_ ? 0.2 : interval_)) return false;
  last_ = el;
  return true;
}

void Progress::adam(std::int64_t epoch, std::int64_t epochs, double loss) {
  if (rank_ != 0 || !due(epoch == epochs)) return;
  std::printf("%sadam   epoch %lld/%lld  loss %.5g  (trajectory 0)  elapsed %s%s", tty_ ? "\r" : "",
              static_cast<long long>(epoch), static_cast<long long>(epochs), loss, format_duration(elapsed()).c_str(),
              tty_ ? "   " : "\n");
  if (tty_ && epoch == epochs) std::printf("\n");
  std::fflush(stdout);
}

void Progress::simmer_from(std::int64_t step) {
  simmer_start_ = Clock::now();
  simmer_first_step_ = step;
}

void Progress::step(std::int64_t step, std::int64_t total, double temperature, double mean_loss,
                    const std::string& metric, bool force) {
  if (rank_ != 0 || !due(force)) return;
  const double el = elapsed();
  const double frac = static_cast<double>(step) / static_cast<double>(total);
  // ETA from the simmering rate alone (not Adam's, nor the steps done before a resume).
  const double done = static_cast<double>(step - simmer_first_step_);
  const double since = std::chrono::duration<double>(Clock::now() - simmer_start_).count();
  const double eta = done > 0 ? since / done * static_cast<double>(total - step) : 0.0;
  // The mean loss is known from the first gather on: "-" before.
  char loss[32] = "-";
  if (!std::isnan(mean_loss)) std::snprintf(loss, sizeof loss, "%.5g", mean_loss);
  if (tty_) {
    const int width = 30;
    const int filled = static_cast<int>(frac * width);
    std::string bar(static_cast<std::size_t>(filled), '#');
    bar.resize(width, '.');
    std::printf("\r[%s] %lld/%lld T %.4g loss %s %s elapsed %s ETA %s   ", bar.c_str(), static_cast<long long>(step),
                static_cast<long long>(total), temperature, loss, metric.c_str(), format_duration(el).c_str(),
                format_duration(eta).c_str());
  } else {
    std::printf("simmer step %lld/%lld  T %.4g  mean train loss %s  %s  elapsed %s  ETA %s\n",
                static_cast<long long>(step), static_cast<long long>(total), temperature, loss, metric.c_str(),
                format_duration(el).c_str(), format_duration(eta).c_str());
  }
  std::fflush(stdout);
}

void Progress::end_line() const {
  if (rank_ == 0 && tty_) std::printf("\n");
}

}  // namespace simmer::parallel
