#pragma once
// libtessera.so is built with hidden visibility: only what these headers mark
// TESSERA_API is exported, so a program links against the public API and
// nothing else (no oneDNN, graph or backend symbols leak into it).
#define TESSERA_API __attribute__((visibility("default")))
