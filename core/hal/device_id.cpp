#include "core/hal/device_id.h"

#include <cctype>
#include <charconv>

namespace tessera {

std::string DeviceId::to_string() const {
  return backend.empty() ? std::string() : backend + ":" + std::to_string(index);
}

Expected<DeviceId> parse_device_id(std::string_view text, std::string_view what) {
  auto bad = [&](const char* why) {
    return invalid_argument(std::string(what) + ": '" + std::string(text) + "' " + why +
                            "; expected BACKEND or BACKEND:INDEX, e.g. vulkan:1 or cpu");
  };
  const size_t colon = text.find(':');
  const std::string_view backend = text.substr(0, colon);
  if (backend.empty()) return bad("has no backend name");
  for (char c : backend)
    if (!std::isalnum((unsigned char)c) && c != '_' && c != '-') return bad("has a character a backend name does not");
  DeviceId id{std::string(backend), 0};
  if (colon == std::string_view::npos) return id;
  const std::string_view index = text.substr(colon + 1);
  if (index.empty() || !std::isdigit((unsigned char)index[0])) return bad("has no index after ':'");
  auto [end, ec] = std::from_chars(index.data(), index.data() + index.size(), id.index);
  if (ec != std::errc() || end != index.data() + index.size()) return bad("has an index that is not a number from 0");
  return id;
}

}  // namespace tessera
