#pragma once
// Pearson's chi-squared goodness of fit for the sampling tests: the
// statistic with sparse cells pooled, and its critical value.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <vector>

namespace tessera::testing {

// The chi-squared quantile at significance alpha = 1e-4 (Wilson-Hilferty;
// within 1% of the exact value from 3 degrees of freedom up): a correct
// sampler fails this one run in 10,000.
inline double chi_square_critical(int df) {
  constexpr double z = 3.719;  // the standard normal's 1 - 1e-4 quantile
  const double a = 2.0 / (9.0 * df);
  return df * std::pow(1.0 - a + z * std::sqrt(a), 3);
}

// Pearson's statistic with the cells of expected count < 5 pooled into one
// (the test's usual validity condition); *df gets the degrees of freedom.
inline double pooled_chi_square(const std::vector<int>& counts, const std::vector<double>& probs, int draws, int* df) {
  double x2 = 0, pooled_e = 0, pooled_o = 0;
  int cells = 0;
  for (size_t i = 0; i < probs.size(); ++i) {
    if (probs[i] == 0) {
      REQUIRE_MESSAGE(counts[i] == 0, "token " << i << " has probability 0 and came out " << counts[i] << " times");
      continue;
    }
    const double e = probs[i] * draws;
    if (e < 5) {
      pooled_e += e;
      pooled_o += counts[i];
      continue;
    }
    x2 += (counts[i] - e) * (counts[i] - e) / e;
    ++cells;
  }
  if (pooled_e > 0) {
    x2 += (pooled_o - pooled_e) * (pooled_o - pooled_e) / pooled_e;
    ++cells;
  }
  *df = std::max(1, cells - 1);
  return x2;
}

}  // namespace tessera::testing
