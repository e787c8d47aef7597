/* jmd_main.h - paddock-jm's whole command line as a function, for its main and for a process
 * that forks and runs it without exec: `paddock submit` starting a job's JM from its own image
 * (tools/submit_jm.c), which skips the second load of ZeroMQ and its dependencies.
 */
#ifndef PADDOCK_JM_DAEMON_JMD_MAIN_H
#define PADDOCK_JM_DAEMON_JMD_MAIN_H

/* Runs paddock-jm with argv (argv[0] its name; docs/jm-daemon.md has the options) and returns
 * its exit status: 0 done, 1 failed, 2 bad usage, 3 fenced by a newer JM. Call it once per
 * process, in a process that has not yet used ZeroMQ (it owns the process's czmq context and
 * signals). */
int jmd_main(int argc, char **argv);

#endif
