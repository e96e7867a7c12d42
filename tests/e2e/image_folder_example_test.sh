#!/usr/bin/env bash
# examples/image_folder end to end: 1000 MNIST digits written as PNG and JPEG files in class
# folders (tools/mnist_images), a convnet trained on 800 of them, saved as .keras, and
# `kiln eval --image-folder` on the 200 validation files. Checks Keras's counts, that kiln
# eval gives the example's own validation accuracy to 9 digits (the same files, split and
# model), and that the accuracy is far above chance (0.1). Skips (77) without MNIST.
#   image_folder_example_test.sh <mnist_images> <image_folder> <kiln>
set -euo pipefail
images="$1" example="$2" kiln="$3"
# shellcheck source=tests/e2e/mnist_folder_test_lib.sh
source "$(dirname "$0")/mnist_folder_test_lib.sh"

"$images" "$tmp/digits" 100
"$example" "$tmp/digits" 4 "$tmp/model.keras" | tee "$tmp/train.log"
"$kiln" eval "$tmp/model.keras" --image-folder "$tmp/digits" --validation-split 0.2 --seed 1337 | tee "$tmp/eval.log"

grep -q "^Found 1000 files belonging to 10 classes.$" "$tmp/train.log" || fail "file count"
grep -q "^Using 800 files for training.$" "$tmp/train.log" || fail "training subset size"
grep -q "^Using 200 files for validation.$" "$tmp/train.log" || fail "validation subset size"
grep -q "^classes: 0 1 2 3 4 5 6 7 8 9$" "$tmp/train.log" || fail "class names"
trained=$(sed -n 's/.*validation accuracy \([0-9.e+-]*\) .*/\1/p' "$tmp/train.log")
evaluated=$(sed -n 's/^accuracy: //p' "$tmp/eval.log")
[ -n "$trained" ] && [ "$trained" = "$evaluated" ] || fail "kiln eval gave accuracy '$evaluated', the example '$trained'"
awk -v a="$evaluated" 'BEGIN { exit !(a >= 0.6) }' || fail "validation accuracy $evaluated is below 0.6"
# A missing folder is an error naming it, not a crash.
if "$kiln" eval "$tmp/model.keras" --image-folder "$tmp/nope" 2> "$tmp/err.log"; then fail "a missing folder passed"; fi
grep -q "DataError: \[image_dataset_from_directory\] $tmp/nope is not a folder" "$tmp/err.log" || fail "$(cat "$tmp/err.log")"
echo "image_folder: validation accuracy $evaluated (chance 0.1), equal in the example and in kiln eval"
