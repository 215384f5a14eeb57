#!/bin/sh
# Stands in for a training rank under dist-launch: records that it finished
# (as `train` does once its outputs are written), then exits with 3, as a
# rank killed while leaving MPI would make mpirun fail.
printf 'pid=%d step=3 beat=0 state=done host=%s\n' $$ "$(uname -n)" \
  > "$DIST_LAUNCH_DIR/rank-${OMPI_COMM_WORLD_RANK:-0}"
exit 3
