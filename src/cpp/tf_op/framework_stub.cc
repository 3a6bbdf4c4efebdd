// Empty on purpose: a link stub for the rollout op (rollout_op.cc), never installed. Built as a
// shared library whose SONAME is libtensorflow_framework.so.2, it gives the op a DT_NEEDED entry
// on libtensorflow_framework.so.2 with no TensorFlow present at build time. At run time that
// entry matches the framework library `import tensorflow` has already loaded (by SONAME), and
// the op's undefined TF_* symbols bind to it.
