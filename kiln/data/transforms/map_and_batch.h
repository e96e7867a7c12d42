// map_and_batch: a parallel stateless map fused with the batch that follows it (tf.data's
// map_and_batch fusion; Dataset::batch builds it). Each ParallelRunner worker takes the rows of
// whole batches, maps them one by one and copies every result into the batch tensors while it
// is still in cache: no per-element hand-off from map to batch, no batching thread, and each
// mapped row's storage is reused by the next row on the same thread.
#pragma once

#include "kiln/data/dataset.h"

namespace kiln::data {

/// map(fn, options) then batch(batch_size, drop_remainder), as one stage "map_and_batch" with
/// the map's parallelism and order. When `fn` has a batched form, a worker stacks the batch's
/// input rows and calls it once per batch. A function failure loses the batch it was in (the stream
/// goes on with the next batch), as an unfused batch loses the rows it had pulled.
NodePtr make_map_and_batch_node(NodePtr input, MapFunction fn, MapOptions options, int64_t batch_size,
                                bool drop_remainder);

}  // namespace kiln::data
