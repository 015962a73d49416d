import { TlvTag } from './constants.js';

/** Value kind of each named TLV. cstring values carry their NUL on the wire; octets are raw. */
export type TlvKind = 'u8' | 'u16' | 'u32' | 'cstring' | 'octets';

export const TLV_KIND = {
  dest_addr_subunit: 'u8',
  dest_network_type: 'u8',
  dest_bearer_type: 'u8',
  dest_telematics_id: 'u16',
  source_addr_subunit: 'u8',
  source_network_type: 'u8',
  source_bearer_type: 'u8',
  source_telematics_id: 'u16',
  qos_time_to_live: 'u32',
  payload_type: 'u8',
  additional_status_info_text: 'cstring',
  receipted_message_id: 'cstring',
  ms_msg_wait_facilities: 'u8',
  privacy_indicator: 'u8',
  source_subaddress: 'octets',
  dest_subaddress: 'octets',
  user_message_reference: 'u16',
  user_response_code: 'u8',
  source_port: 'u16',
  destination_port: 'u16',
  sar_msg_ref_num: 'u16',
  language_indicator: 'u8',
  sar_total_segments: 'u8',
  sar_segment_seqnum: 'u8',
  sc_interface_version: 'u8',
  callback_num_pres_ind: 'u8',
  callback_num_atag: 'octets',
  number_of_messages: 'u8',
  callback_num: 'octets',
  dpf_result: 'u8',
  set_dpf: 'u8',
  ms_availability_status: 'u8',
  network_error_code: 'octets',
  message_payload: 'octets',
  delivery_failure_reason: 'u8',
  more_messages_to_send: 'u8',
  message_state: 'u8',
  congestion_state: 'u8',
  ussd_service_op: 'u8',
  display_time: 'u8',
  sms_signal: 'u16',
  ms_validity: 'u8',
  alert_on_message_delivery: 'octets',
  its_reply_type: 'u8',
  its_session_info: 'octets',
} as const satisfies Record<keyof typeof TlvTag, TlvKind>;

export type TlvName = keyof typeof TLV_KIND;

interface TlvKindType {
  u8: number;
  u16: number;
  u32: number;
  cstring: string;
  octets: Buffer;
}

/** A TLV kept as raw bytes: an unknown tag, a repeated tag, or a known tag whose length did not fit its kind. */
export interface RawTlv {
  tag: number;
  value: Buffer;
}

export type Tlvs = { -readonly [K in TlvName]?: TlvKindType[(typeof TLV_KIND)[K]] } & { raw?: RawTlv[] };

export interface TlvDef {
  name: TlvName;
  tag: number;
  kind: TlvKind;
}

export const TLV_BY_TAG = new Map<number, TlvDef>();
export const TLV_BY_NAME = new Map<string, TlvDef>();
for (const [name, kind] of Object.entries(TLV_KIND)) {
  const def: TlvDef = { name: name as TlvName, tag: TlvTag[name as TlvName], kind };
  TLV_BY_TAG.set(def.tag, def);
  TLV_BY_NAME.set(name, def);
}
