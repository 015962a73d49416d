import type { CommandName } from './constants.js';

/**
 * Mandatory-body layout of every PDU, in wire order. The codec walks these tables and the PDU types are
 * derived from them, so wire layout and TypeScript shape cannot drift apart.
 */
export type FieldKind = 'u8' | 'cstring' | 'sm' | 'dests' | 'unsuccess';

export interface DestSmeAddress {
  dest_flag: 1;
  dest_addr_ton: number;
  dest_addr_npi: number;
  destination_addr: string;
}
export interface DestDistributionList {
  dest_flag: 2;
  dl_name: string;
}
export type DestAddress = DestSmeAddress | DestDistributionList;

export interface UnsuccessSme {
  dest_addr_ton: number;
  dest_addr_npi: number;
  destination_addr: string;
  error_status_code: number;
}

export interface FieldKindType {
  u8: number;
  cstring: string;
  sm: Buffer; // sm_length octet + short_message octets
  dests: DestAddress[]; // number_of_dests + dest_address list
  unsuccess: UnsuccessSme[]; // no_unsuccess + unsuccess_sme list
}

type Field = readonly [string, FieldKind];

const BIND = [
  ['system_id', 'cstring'],
  ['password', 'cstring'],
  ['system_type', 'cstring'],
  ['interface_version', 'u8'],
  ['addr_ton', 'u8'],
  ['addr_npi', 'u8'],
  ['address_range', 'cstring'],
] as const;
const BIND_RESP = [['system_id', 'cstring']] as const;
const MESSAGE_ID = [['message_id', 'cstring']] as const;
const EMPTY = [] as const;

const SM = [
  ['service_type', 'cstring'],
  ['source_addr_ton', 'u8'],
  ['source_addr_npi', 'u8'],
  ['source_addr', 'cstring'],
  ['dest_addr_ton', 'u8'],
  ['dest_addr_npi', 'u8'],
  ['destination_addr', 'cstring'],
  ['esm_class', 'u8'],
  ['protocol_id', 'u8'],
  ['priority_flag', 'u8'],
  ['schedule_delivery_time', 'cstring'],
  ['validity_period', 'cstring'],
  ['registered_delivery', 'u8'],
  ['replace_if_present_flag', 'u8'],
  ['data_coding', 'u8'],
  ['sm_default_msg_id', 'u8'],
  ['short_message', 'sm'],
] as const;

export const SCHEMA = {
  generic_nack: EMPTY,
  bind_receiver: BIND,
  bind_receiver_resp: BIND_RESP,
  bind_transmitter: BIND,
  bind_transmitter_resp: BIND_RESP,
  bind_transceiver: BIND,
  bind_transceiver_resp: BIND_RESP,
  outbind: [
    ['system_id', 'cstring'],
    ['password', 'cstring'],
  ],
  query_sm: [
    ['message_id', 'cstring'],
    ['source_addr_ton', 'u8'],
    ['source_addr_npi', 'u8'],
    ['source_addr', 'cstring'],
  ],
  query_sm_resp: [
    ['message_id', 'cstring'],
    ['final_date', 'cstring'],
    ['message_state', 'u8'],
    ['error_code', 'u8'],
  ],
  submit_sm: SM,
  submit_sm_resp: MESSAGE_ID,
  deliver_sm: SM,
  deliver_sm_resp: MESSAGE_ID,
  unbind: EMPTY,
  unbind_resp: EMPTY,
  replace_sm: [
    ['message_id', 'cstring'],
    ['source_addr_ton', 'u8'],
    ['source_addr_npi', 'u8'],
    ['source_addr', 'cstring'],
    ['schedule_delivery_time', 'cstring'],
    ['validity_period', 'cstring'],
    ['registered_delivery', 'u8'],
    ['sm_default_msg_id', 'u8'],
    ['short_message', 'sm'],
  ],
  replace_sm_resp: EMPTY,
  cancel_sm: [
    ['service_type', 'cstring'],
    ['message_id', 'cstring'],
    ['source_addr_ton', 'u8'],
    ['source_addr_npi', 'u8'],
    ['source_addr', 'cstring'],
    ['dest_addr_ton', 'u8'],
    ['dest_addr_npi', 'u8'],
    ['destination_addr', 'cstring'],
  ],
  cancel_sm_resp: EMPTY,
  enquire_link: EMPTY,
  enquire_link_resp: EMPTY,
  submit_multi: [
    ['service_type', 'cstring'],
    ['source_addr_ton', 'u8'],
    ['source_addr_npi', 'u8'],
    ['source_addr', 'cstring'],
    ['dest_address', 'dests'],
    ['esm_class', 'u8'],
    ['protocol_id', 'u8'],
    ['priority_flag', 'u8'],
    ['schedule_delivery_time', 'cstring'],
    ['validity_period', 'cstring'],
    ['registered_delivery', 'u8'],
    ['replace_if_present_flag', 'u8'],
    ['data_coding', 'u8'],
    ['sm_default_msg_id', 'u8'],
    ['short_message', 'sm'],
  ],
  submit_multi_resp: [
    ['message_id', 'cstring'],
    ['unsuccess_sme', 'unsuccess'],
  ],
  alert_notification: [
    ['source_addr_ton', 'u8'],
    ['source_addr_npi', 'u8'],
    ['source_addr', 'cstring'],
    ['esme_addr_ton', 'u8'],
    ['esme_addr_npi', 'u8'],
    ['esme_addr', 'cstring'],
  ],
  data_sm: [
    ['service_type', 'cstring'],
    ['source_addr_ton', 'u8'],
    ['source_addr_npi', 'u8'],
    ['source_addr', 'cstring'],
    ['dest_addr_ton', 'u8'],
    ['dest_addr_npi', 'u8'],
    ['destination_addr', 'cstring'],
    ['esm_class', 'u8'],
    ['registered_delivery', 'u8'],
    ['data_coding', 'u8'],
  ],
  data_sm_resp: MESSAGE_ID,
} as const satisfies Record<CommandName, readonly Field[]>;

export type Schema = typeof SCHEMA;

/** Body fields of a command, derived from its schema row. */
export type BodyOf<C extends CommandName> = {
  -readonly [F in Schema[C][number] as F[0]]: FieldKindType[F[1]];
};

/** The response command for each request command. */
export const RESPONSE_OF = {
  bind_receiver: 'bind_receiver_resp',
  bind_transmitter: 'bind_transmitter_resp',
  bind_transceiver: 'bind_transceiver_resp',
  query_sm: 'query_sm_resp',
  submit_sm: 'submit_sm_resp',
  deliver_sm: 'deliver_sm_resp',
  unbind: 'unbind_resp',
  replace_sm: 'replace_sm_resp',
  cancel_sm: 'cancel_sm_resp',
  enquire_link: 'enquire_link_resp',
  submit_multi: 'submit_multi_resp',
  data_sm: 'data_sm_resp',
} as const;

export type RequestCommand = keyof typeof RESPONSE_OF;
/** Requests that expect no response (alert_notification, outbind). */
export type UnansweredCommand = 'alert_notification' | 'outbind';
export type ResponseCommand = (typeof RESPONSE_OF)[RequestCommand] | 'generic_nack';
