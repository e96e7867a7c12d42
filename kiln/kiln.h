// Kiln in one include, for programs written the way the seed writes its Python: the Keras API
// with tf.keras's namespaces, tf.data (Dataset, readers, datasets::mnist), tf.distribute
// (auto_detect, strategies), the ops a map function or custom loop writes (cast, expand_dims,
// reduce_sum, ...), kiln::function and GradientTape, and the error types.
//
//   #include <kiln/kiln.h>
//   using namespace kiln;
//   auto strategy = distribute::auto_detect();
//   keras::models::Sequential model;
//   { auto scope = strategy->scope(); model = keras::models::Sequential({...}); model.compile({...}); }
#pragma once

#include "kiln/core/error.h"
#include "kiln/core/host_tensor.h"
#include "kiln/data/dataset.h"
#include "kiln/data/datasets/mnist.h"
#include "kiln/data/image/decode_image.h"
#include "kiln/data/image/image_color.h"
#include "kiln/data/image/image_geometry.h"
#include "kiln/data/readers/csv_reader.h"
#include "kiln/data/readers/npy_reader.h"
#include "kiln/data/readers/read_file.h"
#include "kiln/data/readers/tfrecord_reader.h"
#include "kiln/distribute/cluster_resolver.h"
#include "kiln/distribute/mpi/mpi_world.h"
#include "kiln/distribute/strategy.h"
#include "kiln/keras/keras.h"
#include "kiln/trace/function.h"
#include "kiln/trace/gradient_tape.h"
#include "kiln/trace/ops/elementwise.h"
#include "kiln/trace/ops/nn.h"
#include "kiln/trace/ops/random.h"
#include "kiln/trace/ops/reduce.h"
#include "kiln/trace/ops/shape.h"
#include "kiln/trace/traced_map.h"
#include "kiln/trace/variable.h"
