#include "simmer/train/nhc.hpp"

#include <cmath>
#include <type_traits>

#include "simmer/core/error.hpp"

namespace simmer::train {

void NhcOptions::validate() const {
  if (!(time_step > 0.0) || !std::isfinite(time_step)) {
    throw FieldError("NhcOptions.time_step", std::to_string(time_step), "must be > 0");
  }
  if (chain_length < 1) {
    throw FieldError("NhcOptions.chain_length", std::to_string(chain_length), "must be >= 1");
  }
  if (!masses.empty() && masses.size() != static_cast<std::size_t>(chain_length)) {
    throw FieldError("NhcOptions.masses", std::to_string(masses.size()) + " values",
                     "needs one mass per chain link (" + std::to_string(chain_length) + ")");
  }
  for (const double q : masses) {
    if (!(q > 0.0) || !std::isfinite(q)) {
      throw FieldError("NhcOptions.masses", std::to_string(q), "every mass must be > 0");
    }
  }
  if (!(thermostat_steps > 0.0) || !std::isfinite(thermostat_steps)) {
    throw FieldError("NhcOptions.thermostat_steps", std::to_string(thermostat_steps), "must be > 0");
  }
  if (!(friction > 0.0) || !std::isfinite(friction)) {
    throw FieldError("NhcOptions.friction", std::to_string(friction), "must be > 0");
  }
  if (prior_precision.size() > 0 && !(prior_precision.array() > 0.0).all()) {
    throw Error("NHC: every prior precision 1/sigma^2 must be > 0");
  }
  if (prior_precision.size() > 0 && !prior_precision.allFinite()) {
    throw Error("NHC: every prior precision 1/sigma^2 must be finite");
  }
  if (parameter_masses.size() > 0 && !(parameter_masses.array() > 0.0 && parameter_masses.array().isFinite()).all()) {
    throw Error("NHC: every parameter mass must be a finite number > 0");
  }
}

NhcState NhcState::zeros(int chain_length) { return {Vector::Zero(chain_length), Vector::Zero(chain_length)}; }

template <class S>
BasicNoseHooverChain<S>::BasicNoseHooverChain(const NhcOptions& options, Index parameter_count)
    : options_(options), n_(parameter_count) {
  options_.validate();
  using Vector64 = ::simmer::Vector;
  mass_ = options_.masses.empty() ? Vector64::Ones(options_.chain_length)
                                  : Eigen::Map<const Vector64>(options_.masses.data(), options_.chain_length).eval();
  prior_ = options_.prior_precision.cast<S>();
  if (is_nose_hoover_langevin(options_.thermostat)) {
    decay_.resize(parameter_count);
    normals_.resize(parameter_count);
  }
  if (options_.parameter_masses.size() > 0) {
    if (options_.parameter_masses.size() != parameter_count) {
      throw Error("NHC: " + std::to_string(options_.parameter_masses.size()) + " parameter masses for " +
                  std::to_string(parameter_count) + " parameters");
    }
    inverse_mass_ = options_.parameter_masses.cwiseInverse().cast<S>();
    velocity_sd_ = options_.parameter_masses.cwiseInverse().cwiseSqrt();
  }
  if (options_.prior_precision.size() > 0 && options_.prior_precision.size() != parameter_count) {
    throw Error("NHC: " + std::to_string(options_.prior_precision.size()) + " prior precisions for " +
                std::to_string(parameter_count) + " parameters");
  }
  dof_ = static_cast<double>(parameter_count) - options_.dof_offset;
  if (!(dof_ > 0.0)) {
    throw FieldError("NhcOptions.dof_offset", std::to_string(options_.dof_offset),
                     "leaves no degrees of freedom for " + std::to_string(parameter_count) + " parameters");
  }
}

template <class S>
double BasicNoseHooverChain<S>::chain_force(const PhaseState& p, int k, double temperature) const {
  const auto i = static_cast<Index>(k - 1);
  if (k == 1) return (p.kinetic - dof_ * temperature) / mass_(0);
  return (mass_(i - 1) * p.chain.w(i - 1) * p.chain.w(i - 1) - temperature) / mass_(i);
}

template <class S>
double BasicNoseHooverChain<S>::step(Vector& x, PhaseState& p, double temperature, BasicObjective<S>& objective,
                                     Vector& grad, Rng* noise) const {
  const double h = options_.time_step;
  const auto half_h = static_cast<S>(0.5 * h);
  if (is_nose_hoover_langevin(options_.thermostat)) {
    if (noise == nullptr) throw Error("internal: the Nose-Hoover-Langevin thermostat needs a random stream");
    return nose_hoover_langevin_step(x, p, temperature, objective, grad, *noise);
  }
  if (options_.thermostat == Thermostat::langevin) {
    if (noise == nullptr) throw Error("internal: the Langevin thermostat needs a random stream");
    const double c = std::exp(-options_.friction * h);
    const double sd = std::sqrt(std::max(temperature, 0.0) * (1.0 - c * c));
    const auto ornstein_uhlenbeck = [&]() {  // O: v ← e^{−γh} v + sqrt((1 − e^{−2γh}) T/m) η
      if (has_parameter_masses()) {
        for (Index i = 0; i < n_; ++i) {
          p.v(i) = static_cast<S>(c * p.v(i) + sd * velocity_sd_(i) * noise->normal());
        }
      } else {
        for (Index i = 0; i < n_; ++i) p.v(i) = static_cast<S>(c * p.v(i) + sd * noise->normal());
      }
    };
    if (options_.splitting == Splitting::baoab) {
      return baoab_step(x, p, temperature, objective, grad, [&]() {
        ornstein_uhlenbeck();
        p.kinetic = twice_kinetic(p.v);  // the thermostat's velocities (PhaseState::kinetic)
      });
    }
    x.noalias() += half_h * p.v;  // A B O B A
    const double loss = acceleration(x, temperature, objective, grad);
    p.v.noalias() -= half_h * grad;
    ornstein_uhlenbeck();
    p.v.noalias() -= half_h * grad;
    p.kinetic = twice_kinetic(p.v);
    x.noalias() += half_h * p.v;
    return loss;
  }
  const int nc = options_.chain_length;
  ::simmer::Vector& s = p.chain.s;
  ::simmer::Vector& w = p.chain.w;
  // w_{k+1} for 1-based k, with w_{N_c+1} = 0.
  const auto next_w = [&](int k) { return k < nc ? w(k) : 0.0; };
  const auto odd_half_kick = [&]() {
    for (int k = 1; k <= nc; k += 2) {
      const double wn = next_w(k);
      const auto i = static_cast<Index>(k - 1);
      w(i) = w(i) * std::exp(-0.5 * h * wn) + 0.5 * h * chain_force(p, k, temperature) * std::exp(-0.25 * h * wn);
    }
  };
  const auto even_drift_half = [&]() {
    for (int k = 2; k <= nc; k += 2) s(k - 1) += 0.5 * h * w(k - 1);
  };

  x.noalias() += half_h * p.v;                                        // 1
  even_drift_half();                                                  // 2
  odd_half_kick();                                                    // 3 (G_k from the state at t)
  const double loss = acceleration(x, temperature, objective, grad);  // 4
  const auto decay = static_cast<S>(std::exp(-h * w(0)));
  const auto kick = static_cast<S>(h * std::exp(-0.5 * h * w(0)));
  p.v = decay * p.v - kick * grad;
  p.kinetic = twice_kinetic(p.v);
  for (int k = 1; k <= nc; k += 2) s(k - 1) += h * w(k - 1);  // 5
  for (int k = 2; k <= nc; k += 2) {                          // 6 (G_k from odd w of 3)
    const double wn = next_w(k);
    const auto i = static_cast<Index>(k - 1);
    w(i) = w(i) * std::exp(-h * wn) + h * chain_force(p, k, temperature) * std::exp(-0.5 * h * wn);
  }
  x.noalias() += half_h * p.v;  // 7
  even_drift_half();            // 8
  odd_half_kick();              // 9 (G_1 from the new v, G_k≥3 from the new even w)
  return loss;
}

template <class S>
template <class Update>
double BasicNoseHooverChain<S>::baoab_step(Vector& x, PhaseState& p, double temperature, BasicObjective<S>& objective,
                                           Vector& grad, const Update& thermostat) const {
  const auto half_h = static_cast<S>(0.5 * options_.time_step);
  x.noalias() += half_h * p.v;  // A O A B
  thermostat();
  x.noalias() += half_h * p.v;
  const double loss = acceleration(x, temperature, objective, grad);
  p.v.noalias() -= static_cast<S>(options_.time_step) * grad;
  return loss;
}

template <class S>
double BasicNoseHooverChain<S>::acceleration(const Vector& x, double temperature, BasicObjective<S>& objective,
                                             Vector& grad) const {
  const double loss = objective.evaluate_with_gradient(x, grad);
  if (has_prior()) grad.array() += static_cast<S>(temperature) * prior_.array() * x.array();
  if (has_parameter_masses()) grad.array() *= inverse_mass_.array();
  return loss;
}

template <class S>
void BasicNoseHooverChain<S>::nose_hoover_langevin_update(PhaseState& p, double temperature, double dt) const {
  const double tau = options_.thermostat_steps * options_.time_step;
  const double rate = 1.0 / (tau * tau);
  ::simmer::Vector& xi = p.chain.w;
  const double kick = 0.5 * dt * rate / temperature;  // ξ_i += kick (m_i v_i² − T)
  const double rest = 0.5 * dt * rate;
  // Whole-vector array expressions (Eigen vectorises exp), evaluated in place: no allocation.
  // `v` is a view of p.v, so after the scaling it reads the new velocities.
  const auto v = p.v.array().template cast<double>();
  if (has_parameter_masses()) {
    const auto& m = options_.parameter_masses.array();
    xi.array() += kick * m * v.square() - rest;
    decay_.array() = (-dt * xi.array()).exp();  // alone: a double expression Eigen vectorises
    p.v.array() = (v * decay_.array()).template cast<S>();
    xi.array() += kick * m * v.square() - rest;
    p.kinetic = (m * v.square()).sum();
  } else {
    xi.array() += kick * v.square() - rest;
    decay_.array() = (-dt * xi.array()).exp();
    p.v.array() = (v * decay_.array()).template cast<S>();
    xi.array() += kick * v.square() - rest;
    p.kinetic = v.square().sum();
  }
}

template <class S>
double BasicNoseHooverChain<S>::nose_hoover_langevin_step(Vector& x, PhaseState& p, double temperature,
                                                          BasicObjective<S>& objective, Vector& grad,
                                                          Rng& noise) const {
  // midpoint: x(h/2), thermostat(h/2), kick(h), thermostat(h/2), x(h/2); baoab: x(h/2),
  // thermostat(h), x(h/2), kick(h). Then ξ's Ornstein–Uhlenbeck part over h exactly (it commutes
  // with the position drift and the kick).
  if (!(temperature > 0.0)) {
    throw Error("the Nose-Hoover-Langevin thermostat needs a temperature > 0 (got " + std::to_string(temperature) +
                ")");
  }
  const double h = options_.time_step;
  const auto half_h = static_cast<S>(0.5 * h);
  double loss = 0.0;
  if (options_.splitting == Splitting::baoab) {
    // (the update sets p.kinetic from the thermostat's v)
    loss = baoab_step(x, p, temperature, objective, grad, [&]() { nose_hoover_langevin_update(p, temperature, h); });
  } else {  // A O B O A
    x.noalias() += half_h * p.v;
    nose_hoover_langevin_update(p, temperature, 0.5 * h);
    loss = acceleration(x, temperature, objective, grad);
    p.v.noalias() -= static_cast<S>(h) * grad;
    nose_hoover_langevin_update(p, temperature, 0.5 * h);  // (sets p.kinetic from the new v)
    x.noalias() += half_h * p.v;
  }
  const double tau = options_.thermostat_steps * h;
  const double c = std::exp(-h / tau);  // γ = 1/τ
  const double sd = std::sqrt(1.0 - c * c) / tau;
  ::simmer::Vector& xi = p.chain.w;
  fill_normal_f32(noise, normals_.data(), n_);
  xi.array() = c * xi.array() + sd * normals_.array().cast<double>();
  return loss;
}

template <class S>
NhcState BasicNoseHooverChain<S>::zero_thermostat() const {
  if (is_nose_hoover_langevin(options_.thermostat)) return {::simmer::Vector::Zero(0), ::simmer::Vector::Zero(n_)};
  return NhcState::zeros(options_.chain_length);
}

template <class S>
double BasicNoseHooverChain<S>::kinetic_temperature(const PhaseState& p) const {
  return p.kinetic / dof_;
}

template <class S>
double BasicNoseHooverChain<S>::twice_kinetic(const VectorOf<S>& v) const {
  if (has_parameter_masses()) {
    return (v.template cast<double>().array().square() * options_.parameter_masses.array()).sum();
  }
  if constexpr (std::is_same_v<S, double>) {
    return v.squaredNorm();
  } else {
    return v.template cast<double>().squaredNorm();
  }
}

template <class S>
double BasicNoseHooverChain<S>::prior_energy(const Vector& x, double temperature) const {
  if (!has_prior()) return 0.0;
  return 0.5 * temperature * (options_.prior_precision.array() * x.array().template cast<double>().square()).sum();
}

template <class S>
double BasicNoseHooverChain<S>::extended_energy(const Vector& x, const PhaseState& p, double loss,
                                                double temperature) const {
  if (is_nose_hoover_langevin(options_.thermostat)) {
    // Σ ½ Q ξ_i² with Q = T τ²: an energy, not conserved (heat flows through ξ's noise).
    const double tau = options_.thermostat_steps * options_.time_step;
    return 0.5 * p.kinetic + loss + prior_energy(x, temperature) +
           0.5 * temperature * tau * tau * p.chain.w.squaredNorm();
  }
  double chain_kinetic = 0.0;
  for (Index k = 0; k < mass_.size(); ++k) chain_kinetic += 0.5 * mass_(k) * p.chain.w(k) * p.chain.w(k);
  double chain_potential = dof_ * temperature * p.chain.s(0);
  for (Index k = 1; k < p.chain.s.size(); ++k) chain_potential += temperature * p.chain.s(k);
  return 0.5 * p.kinetic + loss + prior_energy(x, temperature) + chain_kinetic + chain_potential;
}

template <class S>
BasicPhaseState<S> BasicNoseHooverChain<S>::rest_start() const {
  PhaseState p;
  p.v = Vector::Zero(n_);
  p.chain = zero_thermostat();
  p.kinetic = 0.0;
  return p;
}

template <class S>
BasicPhaseState<S> BasicNoseHooverChain<S>::retrofit_start(const Vector& x_last, const Vector& x_previous) const {
  PhaseState p;
  p.v = (x_last - x_previous) / static_cast<S>(options_.time_step);
  p.chain = zero_thermostat();
  p.kinetic = twice_kinetic(p.v);
  return p;
}

template <class S>
BasicPhaseState<S> BasicNoseHooverChain<S>::thermal_start(double temperature, Rng& rng) const {
  if (!(temperature > 0.0) || !std::isfinite(temperature)) {
    throw Error("thermal start velocities need a temperature > 0 (got " + std::to_string(temperature) + ")");
  }
  PhaseState p = rest_start();
  const double sd = std::sqrt(temperature);
  for (Index i = 0; i < n_; ++i) {
    const double scale = has_parameter_masses() ? sd * velocity_sd_(i) : sd;
    p.v(i) = static_cast<S>(scale * rng.normal());
  }
  p.kinetic = twice_kinetic(p.v);
  return p;
}

std::vector<double> martyna_masses(int chain_length, double degrees_of_freedom, double temperature, double tau) {
  if (!(temperature > 0.0) || !std::isfinite(temperature)) {
    throw FieldError("NhcOptions.masses", "martyna",
                     "needs a target temperature > 0 (Q = N_f T tau^2 at the target temperature); got T = " +
                         std::to_string(temperature));
  }
  if (!(tau > 0.0) || !std::isfinite(tau)) {
    throw FieldError("martyna_masses.tau", std::to_string(tau), "must be > 0");
  }
  std::vector<double> q(static_cast<std::size_t>(chain_length), temperature * tau * tau);
  if (!q.empty()) q[0] = degrees_of_freedom * temperature * tau * tau;
  return q;
}

template class BasicNoseHooverChain<double>;
template class BasicNoseHooverChain<float>;

}  // namespace simmer::train
