// tf.keras's namespaces over Kiln's flat kiln::keras names, so the seed's program reads as its
// Python does: keras::layers::Dense, keras::optimizers::Adam, keras::losses::..., keras::metrics::...,
// keras::callbacks::..., keras::models::load_model, keras::datasets::mnist::load_data. The flat
// names stay (keras::Dense is keras::layers::Dense: one type, two names).
#pragma once

#include "kiln/data/datasets/mnist.h"
#include "kiln/keras/callbacks/backup_and_restore.h"
#include "kiln/keras/callbacks/callback.h"
#include "kiln/keras/callbacks/csv_logger.h"
#include "kiln/keras/callbacks/early_stopping.h"
#include "kiln/keras/callbacks/model_checkpoint.h"
#include "kiln/keras/callbacks/profiler.h"
#include "kiln/keras/callbacks/progbar_logger.h"
#include "kiln/keras/callbacks/reduce_lr_on_plateau.h"
#include "kiln/keras/callbacks/tensor_board.h"
#include "kiln/keras/initializers/initializers.h"
#include "kiln/keras/mixed_precision/policy.h"
#include "kiln/keras/optimizers/loss_scale_optimizer.h"
#include "kiln/keras/layers/activation.h"
#include "kiln/keras/layers/add.h"
#include "kiln/keras/layers/batch_normalization.h"
#include "kiln/keras/layers/concatenate.h"
#include "kiln/keras/layers/conv2d.h"
#include "kiln/keras/layers/dense.h"
#include "kiln/keras/layers/dropout.h"
#include "kiln/keras/layers/embedding.h"
#include "kiln/keras/layers/flatten.h"
#include "kiln/keras/layers/global_average_pooling2d.h"
#include "kiln/keras/layers/input_layer.h"
#include "kiln/keras/layers/keras_tensor.h"
#include "kiln/keras/layers/layer_normalization.h"
#include "kiln/keras/layers/multi_head_attention.h"
#include "kiln/keras/layers/pooling1d.h"
#include "kiln/keras/layers/pooling2d.h"
#include "kiln/keras/layers/rescaling.h"
#include "kiln/keras/layers/category_encoding.h"
#include "kiln/keras/layers/hashing.h"
#include "kiln/keras/layers/lookup_layers.h"
#include "kiln/keras/layers/text_vectorization.h"
#include "kiln/keras/layers/image_preprocessing.h"
#include "kiln/keras/layers/normalization.h"
#include "kiln/keras/layers/random_affine_layers.h"
#include "kiln/keras/layers/random_image_layers.h"
#include "kiln/keras/layers/reshape.h"
#include "kiln/keras/losses/losses.h"
#include "kiln/keras/metrics/accuracy.h"
#include "kiln/keras/metrics/confusion.h"
#include "kiln/keras/metrics/metric.h"
#include "kiln/keras/metrics/regression.h"
#include "kiln/keras/models/functional.h"
#include "kiln/keras/models/model_layer.h"
#include "kiln/keras/models/sequential.h"
#include "kiln/keras/optimizers/adadelta.h"
#include "kiln/keras/optimizers/adagrad.h"
#include "kiln/keras/optimizers/adam.h"
#include "kiln/keras/optimizers/adamax.h"
#include "kiln/keras/optimizers/deserialize.h"
#include "kiln/keras/optimizers/ftrl.h"
#include "kiln/keras/optimizers/lion.h"
#include "kiln/keras/optimizers/nadam.h"
#include "kiln/keras/optimizers/rmsprop.h"
#include "kiln/keras/optimizers/schedules.h"
#include "kiln/keras/optimizers/sgd.h"
#include "kiln/keras/saving/saving.h"

namespace kiln::keras {

namespace layers {
using keras::Activation;
using keras::Add;
using keras::AveragePooling2D;
using keras::BatchNormalization;
using keras::Concatenate;
using keras::Conv2D;
using keras::Dense;
using keras::Dropout;
using keras::Embedding;
using keras::Flatten;
using keras::GlobalAveragePooling1D;
using keras::GlobalAveragePooling2D;
using keras::GlobalMaxPooling1D;
using keras::Input;
using keras::InputLayer;
using keras::Layer;
using keras::LayerNormalization;
using keras::MaxPooling2D;
using keras::MultiHeadAttention;
using keras::Rescaling;
using keras::CategoryEncoding;
using keras::CenterCrop;
using keras::Discretization;
using keras::Hashing;
using keras::IntegerLookup;
using keras::StringLookup;
using keras::TextVectorization;
using keras::Normalization;
using keras::RandomBrightness;
using keras::RandomContrast;
using keras::RandomCrop;
using keras::RandomFlip;
using keras::RandomRotation;
using keras::RandomTranslation;
using keras::RandomZoom;
using keras::Resizing;
using keras::Reshape;
}  // namespace layers

namespace models {
using keras::Functional;
using keras::ModelLayer;
using keras::load_model;
using keras::Model;
using keras::model_from_config;
using keras::model_from_json;
using keras::Sequential;
}  // namespace models

namespace saving {
using keras::CustomObjects;
using keras::LayerFactory;
using keras::load_model;
using keras::read_model_config;
}  // namespace saving

namespace optimizers {
using keras::Adadelta;
using keras::Adagrad;
using keras::Adam;
using keras::Adamax;
using keras::AdamW;
using keras::Ftrl;
using keras::Lion;
using keras::LossScaleOptimizer;
using keras::Nadam;
using keras::Optimizer;
using keras::RMSprop;
using keras::SGD;
namespace schedules {
using keras::CosineDecay;
using keras::ExponentialDecay;
using keras::LearningRateSchedule;
using keras::PiecewiseConstantDecay;
}  // namespace schedules
}  // namespace optimizers

namespace losses {
using keras::BinaryCrossentropy;
using keras::CategoricalCrossentropy;
using keras::CategoricalHinge;
using keras::CosineSimilarity;
using keras::Hinge;
using keras::Huber;
using keras::KLDivergence;
using keras::LogCosh;
using keras::Loss;
using keras::MeanAbsoluteError;
using keras::MeanAbsolutePercentageError;
using keras::MeanSquaredError;
using keras::MeanSquaredLogarithmicError;
using keras::Poisson;
using keras::SparseCategoricalCrossentropy;
using keras::SquaredHinge;
}  // namespace losses

namespace metrics {
using keras::Accuracy;
using keras::BinaryAccuracy;
using keras::CategoricalAccuracy;
using keras::Mean;
using keras::Metric;
using keras::SparseCategoricalAccuracy;
}  // namespace metrics

namespace callbacks {
using keras::BackupAndRestore;
using keras::Callback;
using keras::CSVLogger;
using keras::EarlyStopping;
using keras::History;
using keras::LambdaCallback;
using keras::LearningRateScheduler;
using keras::ModelCheckpoint;
using keras::Profiler;
using keras::ProgbarLogger;
using keras::ReduceLROnPlateau;
using keras::TensorBoard;
using keras::TerminateOnNaN;
}  // namespace callbacks

/// keras.datasets.mnist.load_data(): kiln::datasets under its Keras name (an alias, so
/// `using namespace kiln; using namespace kiln::keras;` still sees one `datasets`).
namespace datasets = kiln::datasets;

}  // namespace kiln::keras
