/**
 * The running part of the network inputs (UDP_SERVER, GENERIC_MQTT_SERVER, GENERIC_MQTT) as the script
 * engine sees it: the table of running inputs it starts, restarts and stops (input-table.ts), the sink
 * each is handed, the broker's password check.
 */
export type { InputSink } from './deliver.js';
export type { BrokerAuth } from './mqtt-broker.js';
export type { InputLog, RunningInput } from './running-input.js';
export { createInput, NetworkInputs, type InputDeps, type NetworkInputView } from './input-table.js';
