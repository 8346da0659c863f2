#include <gnutls/gnutls.h>
