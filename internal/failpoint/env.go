package failpoint

// Env names the environment variable that arms a point in a failpoints build.
const Env = "HUTCH_FAILPOINT"
