// optimizer_from_config: Keras optimizer class names and configs, as every Keras version wrote
// them, to Kiln optimizers (an explicit table, as layers/deserialize.cpp is for layers).
#pragma once

#include <string>

#include "kiln/keras/optimizers/optimizer.h"

namespace kiln::keras {

/// An optimizer from its Keras class name and config JSON ("{}" gives Keras's defaults).
/// Class names: Adadelta, Adagrad, Adam, AdamW, Adamax, Ftrl, Lion, Nadam, RMSprop, SGD, in
/// any case, with tf.keras 2.11+'s "Custom>" prefix or tf.keras 2.9-2.10's "Experimental"
/// one. Keys: those Keras 2.11+ and 3 write, plus Keras 2.0-2.10's "lr" (learning_rate),
/// "decay": 0 and "epsilon": null (Keras's 1e-7); extra keys Kiln has no use for are ignored.
/// ConfigError naming the key for a setting Kiln does not implement (a nonzero "decay",
/// legacy Nadam's momentum-schedule decay, amsgrad, clipnorm, clipvalue, global_clipnorm,
/// use_ema, weight_decay outside AdamW, ...), and naming the class and the known ones for an
/// unknown class.
OptimizerHandle optimizer_from_config(const std::string& class_name, const std::string& config_json);

}  // namespace kiln::keras
