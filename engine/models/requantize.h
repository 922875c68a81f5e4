#pragma once
// A model's matrices re-quantized to another type: the same weights, to the
// precision the type keeps. Speculative decoding's natural draft is the
// target itself in fewer bits (`--draft-model synthetic:q4_0@f16`: the
// synthetic f16 bench model's weights in q4_0); 1-D tensors (norms) and
// matrices whose rows are not whole blocks of the type stay as they are.
#include "core/dtype.h"
#include "core/parallel.h"
#include "core/status.h"
#include "engine/models/model_weights.h"

namespace tessera {

// `type` must have a quantizer (core/quant.h quantize_row); the result owns its bytes.
Expected<ModelWeights> requantize(const ModelWeights& m, DType type, ParallelFor& pf);

}  // namespace tessera
