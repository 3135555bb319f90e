// The ESM entry point: the same objects as the CommonJS one.
import httpdns from './index.js';

export const { connect, Client, Monitor, RPCError, ConnectionError, socketPath, urlHost, SYSTEM_SOCKET } = httpdns;
export default httpdns;
