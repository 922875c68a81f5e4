// Device ids (core/hal/device_id.h): backend plus index, as --place, the
// IR's @DEVICE and the runner's slots write them.
#include <doctest/doctest.h>

#include "core/hal/device_id.h"

using namespace tessera;

TEST_CASE("device id: BACKEND:INDEX and a bare BACKEND (device 0) parse, and to_string writes the index always") {
  struct Case {
    const char* text;
    const char* backend;
    int index;
    const char* printed;
  };
  for (const Case& c : {Case{"vulkan:1", "vulkan", 1, "vulkan:1"}, Case{"vulkan", "vulkan", 0, "vulkan:0"},
                        Case{"cpu:0", "cpu", 0, "cpu:0"}, Case{"cuda:12", "cuda", 12, "cuda:12"},
                        Case{"my_backend-2:3", "my_backend-2", 3, "my_backend-2:3"}}) {
    CAPTURE(c.text);
    auto id = parse_device_id(c.text);
    REQUIRE_MESSAGE(id.has_value(), id.status().message());
    CHECK(id->backend == c.backend);
    CHECK(id->index == c.index);
    CHECK(id->to_string() == c.printed);
    // What it prints reads back as the same id.
    auto again = parse_device_id(id->to_string());
    REQUIRE(again.has_value());
    CHECK(*again == *id);
  }
  CHECK(DeviceId{}.to_string().empty());
  CHECK(DeviceId{}.empty());
  // Two devices of one backend are different devices; the order is backend, then index.
  CHECK(DeviceId{"vulkan", 0} != DeviceId{"vulkan", 1});
  CHECK(DeviceId{"vulkan", 0} < DeviceId{"vulkan", 1});
  CHECK(DeviceId{"cpu", 5} < DeviceId{"vulkan", 0});
}

TEST_CASE("device id: malformed text is a one-line error naming the field, the text and the form expected") {
  struct Case {
    const char* text;
    const char* why;
  };
  for (const Case& c : {Case{"", "has no backend name"}, Case{":1", "has no backend name"},
                        Case{"vulkan:", "has no index after ':'"}, Case{"vulkan:-1", "has no index after ':'"},
                        Case{"vulkan:x", "has no index after ':'"}, Case{"vulkan:1x", "is not a number from 0"},
                        Case{"vulkan:1:2", "is not a number from 0"}, Case{"vul kan", "a character a backend name does not"},
                        Case{"vulkan:99999999999", "is not a number from 0"}}) {
    CAPTURE(c.text);
    auto id = parse_device_id(c.text, "--place item 'x=...': DEVICE");
    REQUIRE(!id.has_value());
    const std::string m = id.status().message();
    CHECK(m.find("--place item 'x=...': DEVICE: '" + std::string(c.text) + "' ") == 0);
    CHECK(m.find(c.why) != std::string::npos);
    CHECK(m.find("expected BACKEND or BACKEND:INDEX, e.g. vulkan:1 or cpu") != std::string::npos);
    CHECK(m.find('\n') == std::string::npos);
  }
}
