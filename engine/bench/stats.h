#pragma once
// Order statistics of timings: medians and tail percentiles.
#include <algorithm>
#include <cmath>
#include <vector>

namespace tessera {

// The p-th percentile (0..100) by linear interpolation between the closest
// ranks (numpy's default); 0 for no samples.
inline double percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const double rank = std::clamp(p, 0.0, 100.0) / 100.0 * (double)(v.size() - 1);
  const size_t lo = (size_t)std::floor(rank), hi = (size_t)std::ceil(rank);
  return v[lo] + (v[hi] - v[lo]) * (rank - (double)lo);
}

inline double median(std::vector<double> v) { return percentile(std::move(v), 50); }

}  // namespace tessera
