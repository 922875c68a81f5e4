#pragma once
// What a step costs: a line t(n) = a + b * n in the step's tokens, fitted
// online by recursive least squares with forgetting, from the steps the
// engine ran. The SLO-aware scheduler asks it how many tokens fit a step
// under the TPOT target and how long a prompt's prefill will take.
#include <algorithm>
#include <cstdint>

namespace tessera {

class StepCostModel {
 public:
  // lambda: weight of the past per observation (0.97: about the last 30 steps).
  explicit StepCostModel(double lambda = 0.97) : lambda_(lambda) {}

  void observe(int32_t tokens, double ms) {
    const double x0 = 1, x1 = tokens;
    // P x, and the gain k = P x / (lambda + x' P x).
    const double px0 = p_[0][0] * x0 + p_[0][1] * x1, px1 = p_[1][0] * x0 + p_[1][1] * x1;
    const double denom = lambda_ + x0 * px0 + x1 * px1;
    const double k0 = px0 / denom, k1 = px1 / denom;
    const double err = ms - (theta_[0] * x0 + theta_[1] * x1);
    theta_[0] += k0 * err;
    theta_[1] += k1 * err;
    // P = (P - k x' P) / lambda; x' P = (P x)' as P stays symmetric.
    const double p00 = (p_[0][0] - k0 * px0) / lambda_, p01 = (p_[0][1] - k0 * px1) / lambda_;
    const double p10 = (p_[1][0] - k1 * px0) / lambda_, p11 = (p_[1][1] - k1 * px1) / lambda_;
    p_[0][0] = p00;
    p_[0][1] = 0.5 * (p01 + p10);
    p_[1][0] = p_[0][1];
    p_[1][1] = p11;
    ++observations_;
    lo_ = observations_ == 1 ? tokens : std::min(lo_, tokens);
    hi_ = observations_ == 1 ? tokens : std::max(hi_, tokens);
  }

  // Fitted once it has seen steps of at least two sizes.
  bool ready() const { return observations_ >= 4 && hi_ > lo_; }
  double fixed_ms() const { return std::max(0.0, theta_[0]); }
  double per_token_ms() const { return std::max(1e-6, theta_[1]); }
  double predict_ms(int32_t tokens) const { return fixed_ms() + per_token_ms() * tokens; }
  // The most tokens whose step stays within `ms` (0 when even one does not).
  int32_t tokens_within(double ms) const {
    const double n = (ms - fixed_ms()) / per_token_ms();
    return n < 1 ? 0 : (int32_t)std::min(n, 1e9);
  }

 private:
  double lambda_;
  double theta_[2] = {0, 0};
  double p_[2][2] = {{1e6, 0}, {0, 1e6}};
  int64_t observations_ = 0;
  int32_t lo_ = 0, hi_ = 0;
};

}  // namespace tessera
