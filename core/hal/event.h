#pragma once
// A point in a stream's work (core/hal/stream.h). Stream::record(e) marks it:
// e completes once everything the stream was given before the record has
// finished. An event is made once (Device::create_event) and recorded again
// and again, so the hot path never allocates one.
#include "core/status.h"

namespace tessera {

class Event {
 public:
  virtual ~Event() = default;
  // Whether the work before the last record has finished; never blocks. An
  // event never recorded is complete.
  virtual bool query() = 0;
  // Blocks the calling thread until it is complete. Host copies the stream
  // owes for work before it (Stream::download) are done when this returns;
  // an error is a device failure in that work.
  virtual Status synchronize() = 0;
};

}  // namespace tessera
