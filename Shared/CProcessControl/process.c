#include "roadsave_process.h"

#ifdef __linux__
#include <sys/prctl.h>
#include <signal.h>

int roadsave_set_parent_death_signal(int signal) {
    return prctl(PR_SET_PDEATHSIG, (unsigned long)signal, 0, 0, 0);
}
#else
int roadsave_set_parent_death_signal(int signal) {
    (void)signal;
    return -2;
}
#endif
