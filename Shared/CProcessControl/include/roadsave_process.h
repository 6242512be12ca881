#ifndef ROADSAVE_PROCESS_H
#define ROADSAVE_PROCESS_H

/// Asks the kernel to send `signal` to this process when its parent thread dies (Linux prctl PR_SET_PDEATHSIG).
/// Returns 0 on success, -1 with errno set, or -2 where the call does not exist (not Linux).
int roadsave_set_parent_death_signal(int signal);

#endif
