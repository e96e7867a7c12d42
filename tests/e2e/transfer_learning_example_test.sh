#!/usr/bin/env bash
# examples/transfer_learning end to end on MNIST digits written as image files: a MobileNetV2
# pretrained on digits 0-4 (--pretrain, the stand-in for ImageNet weights) and its base's weights
# saved in Keras's layout; then the transfer run on digits 5-9 loads them (--weights), trains a
# head on the frozen base, fine-tunes the base's top, saves .keras and reloads it. Checks the
# class selection and counts, that the run says when the base starts from random weights, that
# fine-tuning trains more weights than the frozen phase, and that the reloaded model's
# validation accuracy equals the trained one's exactly. Skips (77) without MNIST. Accuracy at
# this size (40 images a class, one epoch) says little: the note quotes a full-size run.
#   transfer_learning_example_test.sh <mnist_images> <transfer_learning>
set -euo pipefail
images="$1" example="$2"
# shellcheck source=tests/e2e/mnist_folder_test_lib.sh
source "$(dirname "$0")/mnist_folder_test_lib.sh"

"$images" "$tmp/digits" 40
"$example" "$tmp/digits" --classes 0,1,2,3,4 --epochs 1 --pretrain "$tmp/base.h5" | tee "$tmp/pretrain.log"
grep -q "^Found 200 files belonging to 5 classes.$" "$tmp/pretrain.log" || fail "pretraining file count"
[ -s "$tmp/base.h5" ] || fail "no base weights written"

"$example" "$tmp/digits" --classes 5,6,7,8,9 --epochs 1 --weights "$tmp/base.h5" --model "$tmp/model.keras" |
  tee "$tmp/transfer.log"
grep -q "^classes: 5 6 7 8 9 (160 training files, 40 validation files)$" "$tmp/transfer.log" || fail "class selection"
grep -q "random weights" "$tmp/transfer.log" && fail "said random weights although --weights was given"
# The frozen phase trains the head alone (kernel and bias); fine-tuning adds the base's top.
grep -q "^Trainable params: 6,405$" "$tmp/transfer.log" || fail "the frozen model's trainable count (1280 x 5 + 5)"
tuned=$(sed -n 's/^fine-tuning .*(\([0-9]*\) trainable weights)$/\1/p' "$tmp/transfer.log")
[ -n "$tuned" ] && [ "$tuned" -gt 2 ] || fail "fine-tuning trains $tuned weights"
trained=$(sed -n 's/^fine-tuned: validation accuracy //p' "$tmp/transfer.log")
reloaded=$(sed -n 's/.*reloaded: validation accuracy //p' "$tmp/transfer.log")
[ -n "$trained" ] && [ "$trained" = "$reloaded" ] || fail "reloaded accuracy '$reloaded', trained '$trained'"

# Without weights the run says so in one line.
"$example" "$tmp/digits" --classes 5,6 --epochs 1 --fine-tune-at 2 --model "$tmp/random.keras" > "$tmp/random.log"
grep -q "^no --weights given: the MobileNetV2 base starts from random weights$" "$tmp/random.log" ||
  fail "no message for random weights"
echo "transfer_learning: fine-tuned validation accuracy $trained, equal after reloading"
